//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/internal/testutil"
	"github.com/qo-queue/qo/monitor"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/namedlease"
	"github.com/qo-queue/qo/store/storetest"
	"github.com/qo-queue/qo/worker"
)

func testLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// Chaos scenarios: real qo processes, real MinIO, real faults. Each checks
// the full history of every task (checker_test.go). Counts and times are
// bounded for CI; QO_SOAK_MINUTES=N runs the mixed scenario for N minutes.

// chaos is a scenario's environment: a queue, a handler that logs each
// execution, and the worker command line.
type chaos struct {
	*wkEnv
	typ string // the type of the tasks submitN submits
	// timeout is the timeout of the tasks submitN submits (3 s by default,
	// so a killed worker's tasks come back soon).
	timeout time.Duration
	log     string // one task id per execution
	script  string
	// args are the worker flags after workerArgs' own: by default the
	// logging handler for type work, concurrency 8 and no sweeper.
	args []string
	// renamed: the killer restarts a worker under a new id, as a
	// replacement machine would, instead of the one it killed.
	renamed bool
	ids     []uuid.UUID
	mu      sync.Mutex
}

func newChaos(t *testing.T) *chaos {
	t.Helper()
	return newChaosOn(t, wkSetup(t), "work")
}

// newChaosOn is newChaos on e, with tasks of type typ (a type of its own
// keeps a scenario apart from tasks already in a shared bucket).
func newChaosOn(t *testing.T, e *wkEnv, typ string) *chaos {
	t.Helper()
	dir := t.TempDir()
	c := &chaos{wkEnv: e, typ: typ, timeout: 3 * time.Second, log: filepath.Join(dir, "executions.log"), script: filepath.Join(dir, "work.sh")}
	// The sweeper is off: every index entry the checker finds at the end was
	// written by the operations themselves.
	c.args = []string{"--exec", typ + "=" + c.script, "--concurrency", "8", "--sweep-interval", "0"}
	// The handler: record the execution, swallow the input, succeed.
	body := fmt.Sprintf("#!/bin/sh\necho \"$QO_TASK_ID\" >> '%s'\ncat >/dev/null\necho '{\"ok\":true}'\n", c.log)
	require.NoError(t, os.WriteFile(c.script, []byte(body), 0o755))
	return c
}

// via points the qo processes started from now on at endpoint.
func (c *chaos) via(endpoint string) {
	env := make([]string, 0, len(c.env))
	for _, kv := range c.env {
		if !strings.HasPrefix(kv, "S3_ENDPOINT=") {
			env = append(env, kv)
		}
	}
	c.env = append(env, "S3_ENDPOINT="+endpoint)
}

// submitN submits n tasks (directly, not through the faults).
func (c *chaos) submitN(t *testing.T, n int) {
	t.Helper()
	retries := 8
	policy := queue.RetryPolicy{InitialIntervalMS: 100, MaxIntervalMS: 1000, Multiplier: 2, JitterPercent: 0.25}
	ids := make([]uuid.UUID, n)
	err := parallelDo(n, 32, func(i int) error {
		task, _, err := c.q.Submit(context.Background(), queue.SubmitRequest{Type: c.typ, Input: json.RawMessage(`{"n":` + strconv.Itoa(i) + `}`),
			Timeout: c.timeout, MaxRetries: &retries, RetryPolicy: &policy})
		if err == nil {
			ids[i] = task.ID
		}
		return err
	})
	require.NoError(t, err)
	c.mu.Lock()
	c.ids = append(c.ids, ids...)
	c.mu.Unlock()
}

func parallelDo(n, conc int, fn func(i int) error) error {
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, conc)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := fn(i); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// worker starts a worker process with c.args.
func (c *chaos) worker(t *testing.T, id string, extra ...string) *wkProc {
	args := workerArgs(id, append(append([]string(nil), c.args...), extra...)...)
	return c.start(t, id, args...)
}

// waitAllDone waits until every submitted task is finished, reading the
// tasks themselves, not the indexes (the checker judges those at the end).
func (c *chaos) waitAllDone(t *testing.T, within time.Duration) {
	t.Helper()
	c.mu.Lock()
	open := append([]uuid.UUID(nil), c.ids...)
	c.mu.Unlock()
	unfinished := func() string {
		task, err := c.q.Get(context.Background(), open[0])
		return fmt.Sprintf("%d unfinished, e.g. %+v (%v)", len(open), task, err)
	}
	testutil.Poll{Limit: within, Every: time.Second}.Until(t, func() bool {
		var still []uuid.UUID
		var mu sync.Mutex
		_ = parallelDo(len(open), 16, func(i int) error {
			task, err := c.q.Get(context.Background(), open[i])
			if err != nil || !task.Status.Terminal() {
				mu.Lock()
				still = append(still, open[i])
				mu.Unlock()
			}
			return nil
		})
		open = still
		return len(open) == 0
	}, "every task to finish: %s", testutil.Lazy(unfinished))
}

// killer kill -9s a random worker every 1.5-3.5 s and starts a replacement
// until stop is closed.
func (c *chaos) killer(t *testing.T, procs []*wkProc, ids []string, stop <-chan struct{}) (kills int) {
	rnd := rand.New(rand.NewSource(7))
	for {
		select {
		case <-stop:
			return kills
		case <-time.After(time.Duration(1500+rnd.Intn(2000)) * time.Millisecond):
		}
		i := rnd.Intn(len(procs))
		_ = procs[i].cmd.Process.Signal(syscall.SIGKILL)
		<-procs[i].done
		procs[i].done <- nil // for the cleanup
		kills++
		id := ids[i]
		if c.renamed {
			id = fmt.Sprintf("%s-%d", ids[i], kills)
		}
		procs[i] = c.worker(t, id)
	}
}

// TestChaosKill9 is the main scenario: 3 workers x concurrency 8 on 2,000
// tasks, a random worker killed with SIGKILL and restarted every few
// seconds. Nothing may be lost or applied twice.
func TestChaosKill9(t *testing.T) {
	t.Parallel()
	c := newChaos(t)
	n := 2000
	if testing.Short() {
		n = 300
	}
	c.submitN(t, n)
	ids := []string{"chaos-a", "chaos-b", "chaos-c"}
	procs := make([]*wkProc, len(ids))
	for i, id := range ids {
		procs[i] = c.worker(t, id)
	}
	stop := make(chan struct{})
	kills := make(chan int, 1)
	go func() { kills <- c.killer(t, procs, ids, stop) }()
	start := time.Now()
	c.waitAllDone(t, 10*time.Minute)
	close(stop)
	k := <-kills
	v := checkHistories(t, c.wkEnv, c.ids, c.log)
	t.Logf("kill -9 scenario: %d tasks in %s with %d kills", n, time.Since(start).Round(time.Second), k)
	v.requireSound(t)
	require.Equal(t, n, v.Completed, "every task completes (the handler always succeeds)")
	require.GreaterOrEqual(t, v.Executions, n)
}

// TestChaosNetworkFaults: 5% of requests fail (503 SlowDown, 500), 1% of
// PUTs commit with the response lost, and every byte is delayed by 5-25 ms.
func TestChaosNetworkFaults(t *testing.T) {
	t.Parallel()
	c := newChaos(t)
	f := newFaultChain(t, storetest.S3Config(t, "x").Endpoint)
	f.SetRates(0.05, 0.01)
	f.Toxic("latency", "downstream", 1, map[string]any{"latency": 15, "jitter": 10})
	c.via(f.Endpoint())
	c.submitN(t, 300)
	c.worker(t, "faulty-a")
	c.worker(t, "faulty-b")
	c.waitAllDone(t, 4*time.Minute)
	v := checkHistories(t, c.wkEnv, c.ids, c.log)
	t.Logf("injected: %d errors and %d lost responses in %d requests", f.Errors.Load(), f.Lost.Load(), f.Requests.Load())
	v.requireSound(t)
	require.Equal(t, 300, v.Completed)
	require.Positive(t, f.Errors.Load())
	require.Positive(t, f.Lost.Load())
}

// TestChaosUnknownOutcomes: 3% of PUTs commit with the response lost and
// every re-read of the key failing for two seconds after, so the writer
// cannot learn the outcome (the SDK's own retry of the PUT is refused
// with 412 and the re-read fails). With the sweeper off, every task still
// completes exactly once and every index entry is where its state needs it.
func TestChaosUnknownOutcomes(t *testing.T) {
	t.Parallel()
	c := newChaos(t)
	f := newFaultChain(t, storetest.S3Config(t, "x").Endpoint)
	f.SetBlindRate(0.03)
	c.via(f.Endpoint())
	c.submitN(t, 200)
	c.worker(t, "blind-a")
	c.worker(t, "blind-b")
	c.waitAllDone(t, 4*time.Minute)
	v := checkHistories(t, c.wkEnv, c.ids, c.log)
	t.Logf("injected: %d blind lost responses in %d requests", f.Blind.Load(), f.Requests.Load())
	v.requireSound(t)
	require.Equal(t, 200, v.Completed)
	require.Positive(t, f.Blind.Load())
}

// TestChaosBucketDown: the S3 server is unreachable for 10 s while workers
// run; they ride it out and everything completes.
func TestChaosBucketDown(t *testing.T) {
	t.Parallel()
	c := newChaos(t)
	f := newFaultChain(t, storetest.S3Config(t, "x").Endpoint)
	c.via(f.Endpoint())
	c.submitN(t, 200)
	a := c.worker(t, "down-a")
	b := c.worker(t, "down-b")
	time.Sleep(2 * time.Second)
	f.Down()
	time.Sleep(10 * time.Second)
	f.Up()
	c.waitAllDone(t, 4*time.Minute)
	v := checkHistories(t, c.wkEnv, c.ids, c.log)
	v.requireSound(t)
	require.Equal(t, 200, v.Completed)
	for _, p := range []*wkProc{a, b} {
		select {
		case err := <-p.done:
			t.Fatalf("a worker exited during the outage: %v\n%s", err, p.out.String())
		default:
		}
	}
}

// TestChaosLeaderAndShardHolderKilled: with shard leasing, the worker whose
// monitor leads and then a shard-lease holder are killed with SIGKILL; the
// others take over the leadership and the shards, and nothing is lost.
func TestChaosLeaderAndShardHolderKilled(t *testing.T) {
	t.Parallel()
	c := newChaos(t)
	c.submitN(t, 300)
	ids := []string{"lead-a", "lead-b", "lead-c"}
	procs := map[string]*wkProc{}
	for _, id := range ids {
		procs[id] = c.worker(t, id, "--shard-leasing", "--shard-leasing-ttl", "3s", "--shard-leasing-renew", "1s")
	}
	var leader string
	testutil.Poll{Limit: 30 * time.Second, Every: 100 * time.Millisecond}.Until(t, func() bool {
		l, err := namedlease.Read(context.Background(), c.q, queue.MonitorLeaderKey)
		if err != nil || l.Holder == "" {
			return false
		}
		leader = strings.TrimSuffix(l.Holder, "-monitor")
		return procs[leader] != nil
	}, "the monitor of one of %q to lead", ids)
	_ = procs[leader].cmd.Process.Signal(syscall.SIGKILL)
	var holder string
	for _, id := range ids {
		if id != leader {
			holder = id
			break
		}
	}
	time.Sleep(2 * time.Second)
	_ = procs[holder].cmd.Process.Signal(syscall.SIGKILL)
	c.waitAllDone(t, 4*time.Minute)
	v := checkHistories(t, c.wkEnv, c.ids, c.log)
	v.requireSound(t)
	require.Equal(t, 300, v.Completed)
	// The tasks can all finish before the dead leader's lease runs out
	// (5 s), so the takeover is waited for, not assumed.
	survivor := ""
	for _, id := range ids {
		if id != leader && id != holder {
			survivor = id + "-monitor"
		}
	}
	testutil.Poll{Limit: 30 * time.Second, Every: 100 * time.Millisecond}.Until(t, func() bool {
		l, err := namedlease.Read(context.Background(), c.q, queue.MonitorLeaderKey)
		return err == nil && l.Holder == survivor
	}, "the survivor %s to lead", survivor)
}

// TestSoak runs kill -9 and network faults together for QO_SOAK_MINUTES
// with tasks submitted all along. Not part of the default run.
func TestSoak(t *testing.T) {
	minutes, _ := strconv.Atoi(os.Getenv("QO_SOAK_MINUTES"))
	if minutes <= 0 {
		t.Skip("set QO_SOAK_MINUTES=N to soak for N minutes")
	}
	c := newChaos(t)
	f := newFaultChain(t, storetest.S3Config(t, "x").Endpoint)
	f.SetRates(0.05, 0.01)
	c.via(f.Endpoint())
	ids := []string{"soak-a", "soak-b", "soak-c"}
	procs := make([]*wkProc, len(ids))
	for i, id := range ids {
		procs[i] = c.worker(t, id)
	}
	stop := make(chan struct{})
	kills := make(chan int, 1)
	go func() { kills <- c.killer(t, procs, ids, stop) }()
	end := time.Now().Add(time.Duration(minutes) * time.Minute)
	for time.Now().Before(end) {
		c.submitN(t, 100)
		time.Sleep(5 * time.Second)
	}
	close(stop)
	k := <-kills
	f.SetRates(0, 0)
	c.waitAllDone(t, 10*time.Minute)
	v := checkHistories(t, c.wkEnv, c.ids, c.log)
	t.Logf("soak: %d minutes, %d kills, %d injected errors, %d lost responses", minutes, k, f.Errors.Load(), f.Lost.Load())
	v.requireSound(t)
}

// skewedClock is the server clock estimate shifted by a fixed offset, as a
// process with a wrong clock would see time if it did not use the server's.
type skewedClock struct{ offset time.Duration }

func (s skewedClock) Now() time.Time { return time.Now().Add(s.offset) }

// TestChaosClockSkew runs two workers (in this process) whose clocks are
// 1.5 s ahead and 1.5 s behind, within queue.MaxClockSkew, with short
// leases so expiry and renewal race: the history must stay sound.
func TestChaosClockSkew(t *testing.T) {
	t.Parallel()
	require.Less(t, 1500*time.Millisecond, queue.MaxClockSkew)
	c := newChaos(t)
	c.submitN(t, 200)
	var mu sync.Mutex
	execs := map[uuid.UUID]int{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for i, off := range []time.Duration{1500 * time.Millisecond, -1500 * time.Millisecond} {
		q, err := queue.Open(ctx, c.s, queue.Options{Clock: skewedClock{offset: off}})
		require.NoError(t, err)
		w := worker.New(q, worker.Options{ID: fmt.Sprintf("skew-%d", i), Concurrency: 8, PollMin: 10 * time.Millisecond, PollMax: 200 * time.Millisecond,
			HeartbeatInterval: time.Second, Logger: testLogger(), Monitor: monitor.Options{CheckInterval: 300 * time.Millisecond}})
		w.Handle("work", func(ctx context.Context, task *queue.Task) (json.RawMessage, error) {
			mu.Lock()
			execs[task.ID]++
			mu.Unlock()
			time.Sleep(time.Duration(rand.Intn(50)) * time.Millisecond)
			return json.RawMessage(`{"ok":true}`), nil
		})
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = w.Run(ctx)
		}()
	}
	c.waitAllDone(t, 4*time.Minute)
	cancel()
	wg.Wait()
	v := checkHistories(t, c.wkEnv, c.ids, "")
	for _, n := range execs {
		v.Executions += n
		v.Duplicates += n - 1
	}
	v.requireSound(t)
	require.Equal(t, 200, v.Completed)
}
