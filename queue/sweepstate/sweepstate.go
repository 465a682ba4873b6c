package sweepstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
)

// Queue is what the sweep state needs of a queue: *queue.Queue is one.
type Queue interface {
	Store() store.Store
	Logger() *slog.Logger
}

// maxObject bounds the state object: a few keys and times.
const maxObject = 1 << 20

// State is where the monitor's sweeper stands, kept in the bucket
// (monitor/sweep.json) so a new leader resumes the pass instead of
// starting over.
type State struct {
	Format int `json:"format"`
	// Cursor is the ready-index key the next round starts after ("": the
	// next round starts a new pass).
	Cursor string `json:"cursor"`
	// WaitingCursor is the waiting-index key the next round's page of
	// waiting tasks starts after (see queue.Recovery.SweepWaiting).
	WaitingCursor string `json:"waiting_cursor,omitempty"`
	// PassStartedAt is when the current pass began; LastPassAt when the
	// previous one ended (zero before the first).
	PassStartedAt time.Time `json:"pass_started_at"`
	LastPassAt    time.Time `json:"last_pass_at,omitzero"`
	// LastRoundAt is when the last round ran, and by which monitor.
	LastRoundAt time.Time `json:"last_round_at"`
	Holder      string    `json:"holder"`
}

// Load reads the sweeper's state; the zero state (a new pass) when there
// is none or it cannot be decoded (reported in the error only when the
// read itself failed).
func Load(ctx context.Context, q Queue) (State, error) {
	obj, err := queue.GetLimited(ctx, q.Store(), queue.SweepStateKey, maxObject)
	if errors.Is(err, store.ErrNotFound) {
		return State{}, nil
	}
	if err != nil {
		return State{}, fmt.Errorf("read sweep state: %w", err)
	}
	var st State
	if json.Unmarshal(obj.Body, &st) != nil || st.Format != queue.FormatVersion {
		q.Logger().Warn("sweep state is malformed; starting a new pass", "key", queue.SweepStateKey)
		return State{}, nil
	}
	return st, nil
}

// Save writes the sweeper's state (one unconditional PUT: only the leader
// sweeps, and two leaders for a moment at worst repeat a page).
func Save(ctx context.Context, q Queue, st State) error {
	st.Format = queue.FormatVersion
	body, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if _, err := q.Store().Put(ctx, queue.SweepStateKey, body, store.Condition{}); err != nil {
		return fmt.Errorf("write sweep state: %w", err)
	}
	return nil
}
