//go:build unix

package e2e

// The forced race: two worker processes of the same type over the same
// tasks, each claim a compare-and-swap that only one of them may win. On a
// server whose reads can be torn (an old body with the ETag of the write
// that replaced it) a loser reads "pending" with the winner's ETag, its
// If-Match claim succeeds too and the handler runs twice.

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/internal/testutil"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store/s3store"
)

// Environment of TestForcedRaceEndpoint.
const (
	envRaceEndpoint  = "QO_RACE_ENDPOINT"
	envRaceBucket    = "QO_RACE_BUCKET"
	envRaceAccessKey = "QO_RACE_ACCESS_KEY"
	envRaceSecretKey = "QO_RACE_SECRET_KEY"
	envRaceRegion    = "QO_RACE_REGION"
	envRaceTasks     = "QO_RACE_TASKS"
)

// raceResult is what a forced race found.
type raceResult struct {
	tasks   int
	doubles int // executions beyond the first of a task, from the handlers' log
	verdict verdict
}

// forcedRace runs two worker processes serving a type of their own on e,
// submits n tasks of that type in bursts that both see at once, waits
// until every task finished, and counts the double executions. It logs the line
//
//	forced race: <tasks> tasks, <doubles> double executions
//
// which scripts read.
func forcedRace(t *testing.T, e *wkEnv, n int) raceResult {
	t.Helper()
	var b [4]byte
	_, _ = rand.Read(b[:])
	c := newChaosOn(t, e, "race-"+hex.EncodeToString(b[:]))
	// Long enough that no attempt times out on a slow machine: every
	// second execution is then a race lost and won twice, never a retry.
	c.timeout = 10 * time.Minute
	// Both poll every 20-25 ms and have more free slots than a burst has
	// tasks: each lists every task of a burst and tries to claim it.
	c.worker(t, "race-a", "--concurrency", "16", "--poll-max", "25ms")
	c.worker(t, "race-b", "--concurrency", "16", "--poll-max", "25ms")
	const burst = 8
	for len(c.ids) < n {
		c.submitN(t, min(burst, n-len(c.ids)))
		waitClaimed(t, c.q, c.ids[len(c.ids)-min(burst, len(c.ids)):])
	}
	c.waitAllDone(t, 8*time.Minute)
	r := raceResult{tasks: n, verdict: checkHistories(t, c.wkEnv, c.ids, c.log)}
	for _, k := range executionsPerTask(t, c.log) {
		r.doubles += k - 1
	}
	t.Logf("forced race: %d tasks, %d double executions", r.tasks, r.doubles)
	return r
}

// waitClaimed waits until none of the tasks ids is pending.
func waitClaimed(t *testing.T, q *queue.Queue, ids []uuid.UUID) {
	t.Helper()
	testutil.Poll{Limit: 2 * time.Minute, Every: 10 * time.Millisecond}.Until(t, func() bool {
		for _, id := range ids {
			if task, err := q.Get(context.Background(), id); err != nil || task.Status == queue.StatusPending {
				return false
			}
		}
		return true
	}, "the workers to claim a burst of %d tasks", len(ids))
}

// executionsPerTask reads a handler log (one task id a line).
func executionsPerTask(t *testing.T, log string) map[string]int {
	t.Helper()
	f, err := os.Open(log)
	require.NoError(t, err)
	defer f.Close()
	n := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if id := strings.TrimSpace(sc.Text()); id != "" {
			n[id]++
		}
	}
	require.NoError(t, sc.Err())
	return n
}

// requireNoDoubles fails the test on any double execution and on any
// history the checker finds unsound (two claimed versions of one rev
// among them).
func (r raceResult) requireNoDoubles(t *testing.T) {
	t.Helper()
	assert.Zero(t, r.doubles, "double executions")
	r.verdict.requireSound(t)
	require.Equal(t, r.tasks, r.verdict.Completed, "every task completes (the handler always succeeds)")
}

// The forced race through `qo dev` whose data directory already has the
// sidecar metadata directory (as on Windows, or on a filesystem without
// user xattrs, or after either): no task may run twice.
func TestForcedRaceDevSidecar(t *testing.T) {
	t.Parallel()
	devSkip(t)
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "gateway", "meta"), 0o755))
	d := startDev(t, dir, testutil.FreeAddr(t))
	cfg := s3store.Config{PathStyle: true}
	for _, kv := range d.env(t) {
		name, value, _ := strings.Cut(kv, "=")
		switch name {
		case "S3_ENDPOINT":
			cfg.Endpoint = value
		case "S3_BUCKET":
			cfg.Bucket = value
		case "AWS_ACCESS_KEY_ID":
			cfg.AccessKey = value
		case "AWS_SECRET_ACCESS_KEY":
			cfg.SecretKey = value
		case "AWS_REGION":
			cfg.Region = value
		}
	}
	s, err := s3store.New(context.Background(), cfg)
	require.NoError(t, err)
	forcedRace(t, wkSetupOn(t, s, cfg), 600).requireNoDoubles(t)
	require.Equal(t, 0, d.stop(t))
}

// The forced race against any S3 endpoint (scripts run it per server):
// QO_RACE_ENDPOINT, QO_RACE_BUCKET (created if missing), QO_RACE_ACCESS_KEY,
// QO_RACE_SECRET_KEY, QO_RACE_REGION (default us-east-1), QO_RACE_TASKS
// (default 200). Skipped unless QO_RACE_ENDPOINT is set.
func TestForcedRaceEndpoint(t *testing.T) {
	endpoint := os.Getenv(envRaceEndpoint)
	if endpoint == "" {
		t.Skip(envRaceEndpoint + " is not set: set it (and " + envRaceBucket + ", " + envRaceAccessKey + ", " +
			envRaceSecretKey + ") to run the forced race against that server")
	}
	cfg := s3store.Config{
		Endpoint:  endpoint,
		Bucket:    os.Getenv(envRaceBucket),
		AccessKey: os.Getenv(envRaceAccessKey),
		SecretKey: os.Getenv(envRaceSecretKey),
		Region:    os.Getenv(envRaceRegion),
		PathStyle: true,
	}
	require.NotEmpty(t, cfg.Bucket, "set %s to the bucket to race in", envRaceBucket)
	if cfg.Region == "" {
		cfg.Region = s3store.DefaultRegion
	}
	n := 200
	if v := os.Getenv(envRaceTasks); v != "" {
		var err error
		n, err = strconv.Atoi(v)
		require.NoError(t, err, "%s=%q: want a number of tasks", envRaceTasks, v)
		require.Positive(t, n, "%s=%q: want a positive number of tasks", envRaceTasks, v)
	}
	ctx := context.Background()
	s, err := s3store.New(ctx, cfg)
	require.NoError(t, err)
	require.NoError(t, s.CreateBucket(ctx))
	forcedRace(t, wkSetupOn(t, s, cfg), n).requireNoDoubles(t)
}
