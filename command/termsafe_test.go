package command

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/internal/termsafe/termsafetest"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/control"
	"github.com/qo-queue/qo/queue/registry"
	"github.com/qo-queue/qo/store"
)

// Task data reaches the terminal escaped in every human-readable output:
// status, history, list, tail, wait, workers, pause. --json stays JSON.
func TestHostileTaskTextIsEscaped(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *cliEnv) {
		ctx := t.Context()
		failed := e.submit("mail", `{"note":"in\u009bput \u007f"}`, 0)
		l := e.claim(failed.ID, "w1")
		_, err := e.q.Fail(ctx, l, termsafetest.Hostile)
		require.NoError(t, err)
		// A version written from outside qo: the event unchecked (a bad worker
		// id makes the object malformed, see queue.DecodeTask).
		obj, err := e.s.Get(ctx, failed.Key())
		require.NoError(t, err)
		var doc map[string]any
		require.NoError(t, json.Unmarshal(obj.Body, &doc))
		doc["last_event"] = "failed\x1b]0;pwned\x07"
		body, err := json.Marshal(doc)
		require.NoError(t, err)
		_, err = e.s.Put(ctx, failed.Key(), body, store.Condition{})
		require.NoError(t, err)

		done := e.submit("mail", `{}`, 0)
		// Raw C0 characters cannot be in valid JSON; C1 ones and line breaks
		// between values can.
		_, err = e.q.Complete(ctx, e.claim(done.ID, "w1"), json.RawMessage("{\"out\":\"\u009b2J \\u001b]0;x\\u0007\",\r\n\"n\":1}"))
		require.NoError(t, err)
		cancelled := e.submit("mail", `{}`, 0)
		_, err = e.q.Cancel(ctx, cancelled.ID, termsafetest.Hostile)
		require.NoError(t, err)
		_, err = control.Pause(ctx, e.q, "mail", termsafetest.Hostile)
		require.NoError(t, err)
		_, err = control.Pause(ctx, e.q, "", termsafetest.Hostile)
		require.NoError(t, err)
		require.NoError(t, registry.Put(ctx, e.q, &queue.WorkerInfo{ID: "w1", LastHeartbeat: e.q.Now(), Host: termsafetest.Hostile, Version: termsafetest.Hostile,
			Types: []string{"mail"}, CurrentTasks: []string{termsafetest.Hostile}}))

		for _, args := range [][]string{
			{"status", failed.ID.String()},
			{"status", done.ID.String()},
			{"status", cancelled.ID.String()},
			{"history", failed.ID.String()},
			{"history", done.ID.String()},
			{"list", "--status", "failed"},
			{"list", "--since", "1h"},
			{"tail", failed.ID.String(), "--until-done", "--interval", "10ms"},
			{"wait", failed.ID.String(), cancelled.ID.String(), "--timeout", "5s"},
			{"workers"},
			{"pause", "report"},
		} {
			r := e.run(args...)
			if args[0] == "wait" {
				require.Equal(t, exitTaskFailed, r.code, "%s", r)
			} else {
				require.Equal(t, 0, r.code, "%s", r)
			}
			termsafetest.RequireNoControl(t, "qo "+strings.Join(args, " "), r.stdout+r.stderr)
			if args[0] == "status" && args[1] == failed.ID.String() {
				require.Contains(t, r.stdout, `boom \x1b]0;pwned\a \x1b[2J hidden \u009b31m end`, "escaped, not dropped (white space folded)")
				require.Contains(t, r.stdout, `\u009bput \x7f`, "the input too")
			}
		}

		// --json is for programs: escaped by JSON, unchanged in content.
		r := e.run("status", failed.ID.String(), "--json")
		var got struct {
			LastError string `json:"last_error"`
		}
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &got), r)
		require.Equal(t, termsafetest.Hostile, got.LastError)
	})
}
