package bench

import (
	"github.com/qo-queue/qo/store"
)

// Report is the result of a run. Durations are in milliseconds, rates per
// second.
type Report struct {
	Config struct {
		Tasks, Workers, Concurrency, SubmitTasks, IdleWorkers, SeedFinished int
		IdleSeconds                                                         float64
	} `json:"config"`
	Submit   []Rate    `json:"submit"`
	EndToEnd EndToEnd  `json:"end_to_end"`
	Seeded   *EndToEnd `json:"seeded,omitempty"`
	// Limited is the end-to-end run again with a fleet-wide cap and rate
	// set on its type, for its requests per task beside EndToEnd's.
	Limited *Limited `json:"limited,omitempty"`
	// Keyed is the run over task keys (qo bench --keys).
	Keyed *Keyed `json:"keyed,omitempty"`
	// Processes is the end-to-end run through real worker processes (its
	// requests from their own counters; duplicates are not measured).
	Processes  *EndToEnd `json:"processes,omitempty"`
	Claim      Latency   `json:"claim_latency_ms"`
	Pickup     Latency   `json:"pickup_latency_ms"`
	Raw        Raw       `json:"raw"`
	Efficiency float64   `json:"efficiency"`
	// TaskCeiling is the rate of one task's requests with no dispatcher
	// (see taskCeiling), and OfTaskCeiling the end-to-end rate over it:
	// what the dispatcher costs, apart from the request mix.
	TaskCeiling   Rate    `json:"task_ceiling"`
	OfTaskCeiling float64 `json:"end_to_end_of_task_ceiling"`
	Idle          []Idle  `json:"idle"`
	// History holds the reads beside 0 and SeedFinished finished tasks.
	History []History `json:"history,omitempty"`
	// Fans holds the dependency phases (FanOut, FanIn).
	Fans        []Fan `json:"dependencies,omitempty"`
	Prices      store.Prices
	WorkerRSSMB float64  `json:"worker_rss_mb,omitempty"`
	Targets     []Target `json:"targets"`
}

// Rate is a throughput at a concurrency.
type Rate struct {
	Concurrency int     `json:"concurrency"`
	PerSecond   float64 `json:"per_second"`
}

// EndToEnd is the no-op workload: first submit to last completion.
type EndToEnd struct {
	Tasks           int                  `json:"tasks"`
	Seconds         float64              `json:"seconds"`
	TasksPerSecond  float64              `json:"tasks_per_second"`
	RequestsPerTask map[store.Op]float64 `json:"requests_per_task"`
	CostPerMillion  float64              `json:"cost_per_million_tasks"`
	Duplicates      int64                `json:"duplicate_executions"`
	// Overtaken: per task, how many tasks of the run became ready after it
	// (a later created_at) yet started before it.
	Overtaken Overtaking `json:"overtaken"`
}

// Limited is an end-to-end run under a fleet-wide cap (half the slots of
// the run, so it holds the workers back) and a rate (RatePerSecond, above
// what the run reaches, so the workers hold tokens and take them) on its
// type: what limits cost per task.
type Limited struct {
	Cap           int `json:"cap"`
	RatePerSecond int `json:"rate_per_second"`
	EndToEnd
}

// Overtaking summarises how far tasks were overtaken (see EndToEnd).
type Overtaking struct {
	Max  int     `json:"max"`
	P99  int     `json:"p99"`
	Mean float64 `json:"mean"`
}

// Latency holds percentiles in milliseconds.
type Latency struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
}

// Raw is the store's ceiling at the same concurrency: the mean of one
// measurement right before the end-to-end run and one right after it (a
// shared machine's load drifts; the two are in Runs).
type Raw struct {
	Concurrency int     `json:"concurrency"`
	PutPerSec   float64 `json:"conditional_put_per_second"`
	GetPerSec   float64 `json:"get_per_second"`
	Runs        []Raw   `json:"runs,omitempty"`
}

// add records one measurement and keeps the mean.
func (r *Raw) add(m Raw) {
	r.Concurrency = m.Concurrency
	r.Runs = append(r.Runs, m)
	r.PutPerSec, r.GetPerSec = 0, 0
	for _, x := range r.Runs {
		r.PutPerSec += x.PutPerSec / float64(len(r.Runs))
		r.GetPerSec += x.GetPerSec / float64(len(r.Runs))
	}
}

// Idle is the cost of idle workers.
type Idle struct {
	ShardLeasing      bool                 `json:"shard_leasing"`
	Workers           int                  `json:"workers"`
	RequestsPerMinute map[store.Op]float64 `json:"requests_per_worker_minute"`
	ListsPerPoll      float64              `json:"lists_per_worker_poll"`
	CostPerMonth      float64              `json:"cost_per_worker_month"`
}

// Target is one goal of docs/performance.md, met or not.
type Target struct {
	Name     string  `json:"name"`
	Goal     string  `json:"goal"`
	Measured float64 `json:"measured"`
	Met      bool    `json:"met"`
}

// NewReport returns a report of cfg with no phase measured yet, for a run
// made of phases measured elsewhere (see Report.AddProcesses).
func NewReport(cfg Config) *Report {
	cfg.defaults()
	r := &Report{Prices: cfg.Prices}
	r.Config.Tasks, r.Config.Workers, r.Config.Concurrency = cfg.Tasks, cfg.Workers, cfg.Concurrency
	r.Config.SubmitTasks, r.Config.IdleWorkers, r.Config.SeedFinished = cfg.SubmitTasks, cfg.IdleWorkers, cfg.SeedFinished
	r.Config.IdleSeconds = cfg.Idle.Seconds()
	return r
}
