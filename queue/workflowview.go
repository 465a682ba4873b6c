package queue

import (
	"sort"
	"time"

	"github.com/google/uuid"
)

// WorkflowStatus is where a workflow stands, from its steps' statuses.
type WorkflowStatus string

// The workflow statuses.
const (
	// WorkflowIncomplete: a step's task does not exist (the submit
	// stopped half-way; submitting it again finishes it).
	WorkflowIncomplete WorkflowStatus = "incomplete"
	WorkflowRunning    WorkflowStatus = "running"   // a step waits, is pending or runs
	WorkflowCompleted  WorkflowStatus = "completed" // every step completed
	WorkflowFailed     WorkflowStatus = "failed"    // every step ended, one failed or expired
	WorkflowCancelled  WorkflowStatus = "cancelled" // every step ended, one was cancelled, none failed
)

// Ended reports whether no step of the workflow will run again without an
// operator.
func (s WorkflowStatus) Ended() bool {
	return s == WorkflowCompleted || s == WorkflowFailed || s == WorkflowCancelled
}

// WorkflowView is a workflow with its steps' tasks as read now.
type WorkflowView struct {
	Workflow *Workflow
	// Tasks holds each step's task, in the order of Workflow.Steps; nil
	// when it does not exist or could not be read (Problems says which).
	Tasks    []*Task
	Problems map[string]string // by step name
	Status   WorkflowStatus
	Counts   map[Status]int
	// EndedAt is when the last step ended, once the workflow has.
	EndedAt *time.Time
}

// SummarizeWorkflow makes a view of w from its steps' tasks as read
// elsewhere (nil where missing; problems by step name).
func SummarizeWorkflow(w *Workflow, tasks []*Task, problems map[string]string) *WorkflowView {
	v := &WorkflowView{Workflow: w, Tasks: tasks, Problems: problems}
	if v.Problems == nil {
		v.Problems = map[string]string{}
	}
	v.summarize()
	return v
}

// summarize sets Status, Counts and EndedAt from Tasks.
func (v *WorkflowView) summarize() {
	v.Counts = map[Status]int{}
	v.EndedAt = nil
	missing, running, failed, cancelled := 0, 0, 0, 0
	for _, t := range v.Tasks {
		if t == nil {
			missing++
			continue
		}
		v.Counts[t.Status]++
		st, done := ended(t)
		switch {
		case !done:
			running++
		case st == StatusFailed || st == StatusExpired:
			failed++
		case st == StatusCancelled:
			cancelled++
		}
		if done && t.CompletedAt != nil && (v.EndedAt == nil || t.CompletedAt.After(*v.EndedAt)) {
			v.EndedAt = cloneTime(t.CompletedAt)
		}
	}
	switch {
	case missing > 0:
		v.Status = WorkflowIncomplete
	case running > 0:
		v.Status = WorkflowRunning
	case failed > 0:
		v.Status = WorkflowFailed
	case cancelled > 0:
		v.Status = WorkflowCancelled
	default:
		v.Status = WorkflowCompleted
	}
	if !v.Status.Ended() {
		v.EndedAt = nil
	}
}

// Depths returns each step's depth: 0 for a step without parents, else
// one more than its deepest parent (the order to draw the graph in).
func (w *Workflow) Depths() []int {
	idx := make(map[string]int, len(w.Steps))
	for i, s := range w.Steps {
		idx[s.Name] = i
	}
	depth := make([]int, len(w.Steps))
	done := make([]bool, len(w.Steps))
	var visit func(i, guard int) int
	visit = func(i, guard int) int {
		if done[i] || guard > len(w.Steps) { // guard: a hand-edited record with a cycle
			return depth[i]
		}
		for _, a := range w.Steps[i].After {
			if j, ok := idx[a]; ok {
				depth[i] = max(depth[i], visit(j, guard+1)+1)
			}
		}
		done[i] = true
		return depth[i]
	}
	for i := range w.Steps {
		visit(i, 0)
	}
	return depth
}

// WorkflowReport is a workflow as read now, in the shape qo workflow
// --json and the HTTP API print: steps by depth, roots first.
type WorkflowReport struct {
	ID             uuid.UUID      `json:"id"`
	Name           string         `json:"name,omitempty"`
	IdempotencyKey string         `json:"idempotency_key"`
	Status         WorkflowStatus `json:"status"`
	CreatedAt      time.Time      `json:"created_at"`
	EndedAt        *time.Time     `json:"ended_at"`
	Counts         map[Status]int `json:"counts"`
	Steps          []StepReport   `json:"steps"`
}

// StepReport is one step of a WorkflowReport.
type StepReport struct {
	Name         string     `json:"name"`
	Type         string     `json:"task_type"`
	TaskID       uuid.UUID  `json:"task_id"`
	After        []string   `json:"after"`
	Depth        int        `json:"depth"`
	Status       Status     `json:"status"` // "" when the task is missing (see problem)
	Attempt      int        `json:"attempt"`
	WaitingFor   string     `json:"waiting_for,omitempty"`
	LastError    string     `json:"last_error,omitempty"`
	CancelReason string     `json:"cancel_reason,omitempty"`
	UpdatedAt    *time.Time `json:"updated_at"`
	CompletedAt  *time.Time `json:"completed_at"`
	Problem      string     `json:"problem,omitempty"`
}

// Report renders the view (see WorkflowReport).
func (v *WorkflowView) Report() WorkflowReport {
	w := v.Workflow
	r := WorkflowReport{ID: w.ID, Name: w.Name, IdempotencyKey: w.IdempotencyKey, Status: v.Status,
		CreatedAt: w.CreatedAt, EndedAt: v.EndedAt, Counts: v.Counts, Steps: make([]StepReport, len(w.Steps))}
	depths := w.Depths()
	for i, s := range w.Steps {
		sr := StepReport{Name: s.Name, Type: s.Type, TaskID: s.TaskID, After: s.After, Depth: depths[i], Problem: v.Problems[s.Name]}
		if sr.After == nil {
			sr.After = []string{}
		}
		if t := v.Tasks[i]; t != nil {
			sr.Status, sr.Attempt, sr.LastError, sr.CancelReason = t.Status, t.Attempt, t.LastError, t.CancelReason
			sr.UpdatedAt, sr.CompletedAt = timePtr(t.UpdatedAt), cloneTime(t.CompletedAt)
			if t.Status == StatusWaiting {
				sr.WaitingFor = t.WaitingFor()
			}
		}
		r.Steps[i] = sr
	}
	sort.SliceStable(r.Steps, func(a, b int) bool { return r.Steps[a].Depth < r.Steps[b].Depth })
	return r
}
