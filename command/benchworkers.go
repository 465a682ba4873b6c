package command

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/s3store"
	"github.com/qo-queue/qo/worker/bench"
)

// startWorkerProcess starts a real 'qo worker' on bucket with args.
func startWorkerProcess(ctx context.Context, base s3store.Config, bucket string, args ...string) (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	args = append([]string{"worker", "--endpoint", base.Endpoint, "--bucket", bucket, "--log-level", "error"}, args...)
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = os.Environ()
	if base.Region != "" {
		cmd.Env = append(cmd.Env, "S3_REGION="+base.Region)
	}
	if base.AccessKey != "" {
		cmd.Env = append(cmd.Env, "AWS_ACCESS_KEY_ID="+base.AccessKey, "AWS_SECRET_ACCESS_KEY="+base.SecretKey)
	}
	return cmd, cmd.Start()
}

// workerRSS runs a real 'qo worker' at concurrency 32 through 1,000 echo
// tasks in a fresh bucket and returns its peak resident memory (VmHWM).
func workerRSS(ctx context.Context, base s3store.Config, newBucket func(context.Context, string) (bench.Bucket, error)) (float64, error) {
	_, q, name, remove, err := benchBucket(ctx, "qo-bench-rss-", newBucket)
	if err != nil {
		return 0, err
	}
	defer remove()
	const n = 1000
	for range n {
		if _, _, err := q.Submit(ctx, queue.SubmitRequest{Type: "echo", Input: json.RawMessage(`{"payload":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}`)}); err != nil {
			return 0, err
		}
	}
	cmd, err := startWorkerProcess(ctx, base, name, "--builtins", "--types", "echo", "--concurrency", "32")
	if err != nil {
		return 0, err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		page, err := q.List(ctx, queue.ListQuery{Status: queue.StatusCompleted, Limit: queue.MaxListLimit, MaxScan: 2000})
		if err == nil && len(page.Tasks) >= n {
			break
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("the worker did not finish %d tasks in 5 minutes", n)
		}
		time.Sleep(time.Second)
	}
	return peakRSS(cmd.Process.Pid)
}

// workerProcesses runs the end-to-end workload through real 'qo worker'
// processes (procs x concurrency, echo tasks). The processes are started
// and registered first, then the tasks are submitted, and the run ends when
// the processes' /metrics count every task finished. Requests per task add
// the submitter's requests to what the processes' /metrics counted from
// the first submit to that last scrape: like the in-process run, the
// window holds the load and not the processes' start-up or the polls of
// their idle tail after the last task.
func workerProcesses(ctx context.Context, base s3store.Config, newBucket func(context.Context, string) (bench.Bucket, error), cfg bench.Config) (*bench.EndToEnd, error) {
	b, q, name, remove, err := benchBucket(ctx, "qo-bench-procs-", newBucket)
	if err != nil {
		return nil, err
	}
	defer remove()
	var cmds []*exec.Cmd
	defer func() {
		for _, cmd := range cmds {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	var addrs, ids []string
	for i := range cfg.Workers {
		addr, err := freeLocalAddr()
		if err != nil {
			return nil, err
		}
		id := fmt.Sprintf("bench-proc-%d", i)
		cmd, err := startWorkerProcess(ctx, base, name, "--builtins", "--types", "echo", "--id", id,
			"--concurrency", strconv.Itoa(cfg.Concurrency), "--metrics-addr", addr)
		if err != nil {
			return nil, err
		}
		cmds = append(cmds, cmd)
		addrs, ids = append(addrs, addr), append(ids, id)
	}
	scrape := func() (store.Counts, int64, error) { return scrapeWorkers(ctx, addrs) }
	deadline := time.Now().Add(time.Minute)
	if err := bench.AwaitRegistered(ctx, q, ids, deadline); err != nil {
		return nil, fmt.Errorf("worker processes: %w", err)
	}
	for {
		if _, _, err := scrape(); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%d worker processes did not serve /metrics within a minute", cfg.Workers)
		}
		time.Sleep(100 * time.Millisecond)
	}
	procsBefore, _, err := scrape()
	if err != nil {
		return nil, err
	}
	before := b.Requests().Snapshot()
	start := time.Now()
	if err := submitEchoTasks(ctx, q, cfg.Tasks); err != nil {
		return nil, err
	}
	submitted := b.Requests().Snapshot().Sub(before)
	deadline = time.Now().Add(10 * time.Minute)
	var procs store.Counts
	for {
		var done int64
		if _, done, err = scrape(); err != nil {
			return nil, err
		}
		if done >= int64(cfg.Tasks) {
			// A /metrics answer does not read its counters at one instant:
			// the one that counts the last task finished may miss the
			// requests that finished it (its lease entry's DELETE). A read
			// made after it has them.
			if procs, _, err = scrape(); err != nil {
				return nil, err
			}
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("worker processes finished %d of %d tasks in 10 minutes", done, cfg.Tasks)
		}
		// Scrape again about when the rest should be done at the rate so
		// far: rarely while much is left (a scrape costs the processes
		// CPU), often near the end (the window should close with it).
		wait := 200 * time.Millisecond
		if done > 0 {
			left := time.Duration(float64(time.Since(start)) * float64(int64(cfg.Tasks)-done) / float64(done))
			wait = min(max(left/2, 10*time.Millisecond), wait)
		}
		time.Sleep(wait)
	}
	secs := time.Since(start).Seconds()
	total := submitted.Add(procs.Sub(procsBefore))
	e := &bench.EndToEnd{Tasks: cfg.Tasks, Seconds: secs, TasksPerSecond: float64(cfg.Tasks) / secs, RequestsPerTask: map[store.Op]float64{}}
	for _, op := range store.Ops {
		if n := total.Total(op); n > 0 {
			e.RequestsPerTask[op] = float64(n) / float64(cfg.Tasks)
		}
	}
	e.CostPerMillion = total.Cost(cfg.Prices) / float64(cfg.Tasks) * 1e6
	return e, nil
}

// scrapeWorkers reads the counters of the worker processes serving
// /metrics at addrs: requests by kind and attempts ended (completed or
// failed).
func scrapeWorkers(ctx context.Context, addrs []string) (store.Counts, int64, error) {
	total := store.Counts{OK: map[store.Op]int64{}, Failed: map[store.Op]int64{}}
	var done int64
	for _, addr := range addrs {
		c, d, err := scrapeWorker(ctx, addr)
		if err != nil {
			return store.Counts{}, 0, err
		}
		total, done = total.Add(c), done+d
	}
	return total, done, nil
}

// submitEchoTasks submits n echo tasks, 32 at a time; the error is one of
// the submits that failed.
func submitEchoTasks(ctx context.Context, q *queue.Queue, n int) error {
	errs := make(chan error, 1)
	sem := make(chan struct{}, 32)
	for range n {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			if _, _, err := q.Submit(ctx, queue.SubmitRequest{Type: "echo"}); err != nil {
				select {
				case errs <- err:
				default:
				}
			}
		}()
	}
	for range cap(sem) {
		sem <- struct{}{}
	}
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// freeLocalAddr returns a 127.0.0.1 address with a port free right now,
// for a child process to listen on.
func freeLocalAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// scrapeClient reads the worker processes' /metrics; a process that does
// not answer within its timeout fails the run.
var scrapeClient = &http.Client{Timeout: 10 * time.Second}

// scrapeWorker reads a worker process's /metrics on addr: its S3 requests
// by kind (qo_s3_requests_total) and the attempts it ended as completed or
// failed (qo_tasks_finished_total).
func scrapeWorker(ctx context.Context, addr string) (store.Counts, int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return store.Counts{}, 0, err
	}
	res, err := scrapeClient.Do(req)
	if err != nil {
		return store.Counts{}, 0, fmt.Errorf("scrape %s: %w", addr, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return store.Counts{}, 0, fmt.Errorf("scrape %s: %s", addr, res.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(res.Body)
	if err != nil {
		return store.Counts{}, 0, fmt.Errorf("scrape %s: %w", addr, err)
	}
	c := store.Counts{OK: map[store.Op]int64{}, Failed: map[store.Op]int64{}}
	for _, m := range fams["qo_s3_requests_total"].GetMetric() {
		l := labels(m)
		n := int64(m.GetCounter().GetValue())
		if l["outcome"] == "ok" {
			c.OK[store.Op(l["op"])] += n
		} else {
			c.Failed[store.Op(l["op"])] += n
		}
	}
	var done int64
	for _, m := range fams["qo_tasks_finished_total"].GetMetric() {
		if o := labels(m)["outcome"]; o == "completed" || o == "failed" {
			done += int64(m.GetCounter().GetValue())
		}
	}
	return c, done, nil
}

// labels returns a sample's labels by name.
func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// peakRSS reads VmHWM of a Linux process, in MB.
func peakRSS(pid int) (float64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err != nil {
				return 0, err
			}
			return kb / 1024, nil
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}
