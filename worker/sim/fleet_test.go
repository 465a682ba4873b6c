package sim

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
)

// A process killed while a claim was in flight, whose claim returns only
// when the run is torn down, starts nothing: its handler journals no run
// (seed 1525 showed a run five minutes after its task had been cancelled).
func TestKilledProcessStartsNothing(t *testing.T) {
	t.Parallel()
	f := &fleet{start: time.Now(), teardown: make(chan struct{})}
	p := &proc{id: "w0", spec: WorkerSpec{Speed: 1}, killed: make(chan struct{})}
	close(p.killed)
	close(f.teardown)
	task := &queue.Task{ID: uuid.New(), Type: "a", Input: json.RawMessage(`{"n":1,"ms":10}`)}
	_, err := f.handler(p)(context.Background(), task)
	require.ErrorIs(t, err, errDead)
	require.Empty(t, f.journal.all(), "no run journaled")
}
