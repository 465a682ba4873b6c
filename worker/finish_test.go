package worker

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/qo-queue/qo/queue"
)

// TestDecide covers every way an attempt ends: each cause of a cancelled
// context, each kind of handler error, and each output the queue refuses.
func TestDecide(t *testing.T) {
	t.Parallel()
	const limit = 16
	plain := errors.New("boom")
	long := errors.New(strings.Repeat("x", maxLastError+10))
	timeout := &TimeoutError{After: 2 * time.Second}
	snooze := &SnoozeError{Delay: time.Minute, Reason: "throttled"}
	tests := []struct {
		name  string
		out   string
		herr  error
		cause error
		want  transition
		// errHas: the stored error text contains it (for errors built here).
		errHas string
	}{
		{name: "success", out: `{"a":1}`, want: transition{act: actComplete, output: json.RawMessage(`{"a":1}`)}},
		{name: "success without output", want: transition{act: actComplete}},
		{name: "retryable error", herr: plain, want: transition{act: actRetry, lastError: "boom"}},
		{name: "wrapped retryable", herr: Retryable(plain), want: transition{act: actRetry, lastError: "retryable: boom"}},
		{name: "permanent", herr: Permanent(plain), want: transition{act: actFail, lastError: "permanent: boom"}},
		{name: "wrapped permanent", herr: fmt.Errorf("step 2: %w", Permanent(plain)), want: transition{act: actFail, lastError: "step 2: permanent: boom"}},
		{name: "reschedule", herr: Reschedule(time.Hour), want: transition{act: actReschedule, lastError: "rescheduled in 1h0m0s", delay: time.Hour}},
		{name: "snooze", herr: snooze, want: transition{act: actSnooze, lastError: snooze.Error(), delay: time.Minute, reason: "throttled"}},
		{name: "panic", herr: &PanicError{Value: "oops"}, want: transition{act: actRetry, lastError: (&PanicError{Value: "oops"}).Error()}},
		{name: "long error keeps its end", herr: long, want: transition{act: actRetry, lastError: "..." + strings.Repeat("x", maxLastError)}},
		{name: "invalid JSON output", out: `{"a":`, errHas: "invalid JSON output", want: transition{act: actFail}},
		{name: "output over the limit", out: `"` + strings.Repeat("a", limit) + `"`, errHas: "over the queue's limit of 16 bytes", want: transition{act: actFail}},
		{name: "output at the limit", out: `"` + strings.Repeat("a", limit-2) + `"`, want: transition{act: actComplete, output: json.RawMessage(`"` + strings.Repeat("a", limit-2) + `"`)}},
		{name: "output not UTF-8", out: "\"\xff\"", errHas: "not valid UTF-8", want: transition{act: actFail}},
		{name: "bad output of a failed handler is ignored", out: `{`, herr: plain, want: transition{act: actRetry, lastError: "boom"}},

		{name: "lease lost, success", out: `1`, cause: ErrLeaseLost, want: transition{act: actLost}},
		{name: "lease lost, error", herr: plain, cause: ErrLeaseLost, want: transition{act: actLost}},
		{name: "shutdown", out: `1`, cause: ErrShuttingDown, want: transition{act: actRelease, reason: "worker w1 shut down before the task finished"}},
		{name: "abort", herr: plain, cause: errAbort, want: transition{act: actRelease, reason: "worker w1 shut down before the task finished"}},
		{name: "presumed dead", cause: ErrPresumedDead, want: transition{act: actRelease, reason: "worker w1 lost its heartbeat while the task ran"}},
		{name: "cancel requested, handler succeeded", out: `1`, cause: ErrCancelRequested, want: transition{act: actCompleteCancelled, output: json.RawMessage(`1`)}},
		{name: "cancel requested, handler failed", herr: plain, cause: ErrCancelRequested, want: transition{act: actAckCancel}},
		{name: "cancel requested, bad output", out: `{`, cause: ErrCancelRequested, want: transition{act: actAckCancel}},
		{name: "timed out, handler returned nil", out: `1`, cause: timeout, want: transition{act: actRetry, lastError: "timed out after 2s"}},
		{name: "timed out, handler asked to fail", herr: Permanent(plain), cause: timeout, want: transition{act: actRetry, lastError: "timed out after 2s"}},
		{name: "cancelled for another reason", out: `1`, cause: errors.New("parent gone"), want: transition{act: actComplete, output: json.RawMessage(`1`)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out json.RawMessage
			if tc.out != "" {
				out = json.RawMessage(tc.out)
			}
			got := decide(out, tc.herr, tc.cause, limit, "w1")
			if tc.errHas != "" {
				if !strings.Contains(got.lastError, tc.errHas) {
					t.Errorf("lastError = %q, want it to contain %q", got.lastError, tc.errHas)
				}
				got.lastError = ""
			}
			if got.act != tc.want.act || string(got.output) != string(tc.want.output) || got.lastError != tc.want.lastError ||
				got.delay != tc.want.delay || got.reason != tc.want.reason {
				t.Errorf("decide = %+v (%s), want %+v (%s)", got, got.act.op(), tc.want, tc.want.act.op())
			}
		})
	}
}

// TestOutcomeOf: the written task decides between retried and failed (the
// queue fails a task whose retries are used up) and whether a snooze took.
func TestOutcomeOf(t *testing.T) {
	t.Parallel()
	pending := &queue.Task{Status: queue.StatusPending}
	failed := &queue.Task{Status: queue.StatusFailed}
	tests := []struct {
		act        action
		written    *queue.Task
		want       Outcome
		wantFailed bool
	}{
		{actLost, nil, OutcomeLost, false},
		{actRelease, pending, OutcomeReleased, false},
		{actComplete, &queue.Task{Status: queue.StatusCompleted}, OutcomeCompleted, false},
		{actCompleteCancelled, &queue.Task{Status: queue.StatusCompleted}, OutcomeCompleted, false},
		{actAckCancel, &queue.Task{Status: queue.StatusCancelled}, OutcomeCancelled, false},
		{actReschedule, pending, OutcomeRescheduled, false},
		{actReschedule, failed, OutcomeRescheduled, false},
		{actSnooze, pending, OutcomeSnoozed, false},
		{actSnooze, failed, OutcomeFailed, true},
		{actSnooze, nil, OutcomeRetried, true},
		{actFail, failed, OutcomeFailed, true},
		{actFail, nil, OutcomeRetried, true},
		{actRetry, pending, OutcomeRetried, true},
		{actRetry, failed, OutcomeFailed, true},
	}
	for _, tc := range tests {
		got, gotFailed := outcomeOf(tc.act, tc.written)
		if got != tc.want || gotFailed != tc.wantFailed {
			t.Errorf("outcomeOf(%s, %v) = %s, %v; want %s, %v", tc.act.op(), statusOf(tc.written), got, gotFailed, tc.want, tc.wantFailed)
		}
	}
}
