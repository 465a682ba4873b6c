package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/qo-queue/qo/store"
)

// SweepState is where the monitor's sweeper stands, kept in the bucket
// (monitor/sweep.json) so a new leader resumes the pass instead of
// starting over.
type SweepState struct {
	Format int `json:"format"`
	// Cursor is the ready-index key the next round starts after ("": the
	// next round starts a new pass).
	Cursor string `json:"cursor"`
	// WaitingCursor is the waiting-index key the next round's page of
	// waiting tasks starts after (see SweepWaiting).
	WaitingCursor string `json:"waiting_cursor,omitempty"`
	// PassStartedAt is when the current pass began; LastPassAt when the
	// previous one ended (zero before the first).
	PassStartedAt time.Time `json:"pass_started_at"`
	LastPassAt    time.Time `json:"last_pass_at,omitzero"`
	// LastRoundAt is when the last round ran, and by which monitor.
	LastRoundAt time.Time `json:"last_round_at"`
	Holder      string    `json:"holder"`
}

// LoadSweepState reads the sweeper's state; the zero state (a new pass)
// when there is none or it cannot be decoded (reported in the error only
// when the read itself failed).
func (q *Queue) LoadSweepState(ctx context.Context) (SweepState, error) {
	obj, err := q.getLimited(ctx, SweepStateKey, maxSmallObject)
	if errors.Is(err, store.ErrNotFound) {
		return SweepState{}, nil
	}
	if err != nil {
		return SweepState{}, fmt.Errorf("read sweep state: %w", err)
	}
	var st SweepState
	if json.Unmarshal(obj.Body, &st) != nil || st.Format != FormatVersion {
		q.log.Warn("sweep state is malformed; starting a new pass", "key", SweepStateKey)
		return SweepState{}, nil
	}
	return st, nil
}

// SaveSweepState writes the sweeper's state (one unconditional PUT: only
// the leader sweeps, and two leaders for a moment at worst repeat a page).
func (q *Queue) SaveSweepState(ctx context.Context, st SweepState) error {
	st.Format = FormatVersion
	body, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if _, err := q.s.Put(ctx, SweepStateKey, body, store.Condition{}); err != nil {
		return fmt.Errorf("write sweep state: %w", err)
	}
	return nil
}
