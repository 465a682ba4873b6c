package httpapi

import (
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
)

// bulkBody is the body of POST /api/tasks/bulk.
type bulkBody struct {
	Op     string   `json:"op"`
	IDs    []string `json:"ids"`
	Filter *struct {
		Status []string `json:"status"`
		Type   string   `json:"type"`
		Shard  string   `json:"shard"`
		Since  string   `json:"since"`
	} `json:"filter"`
	Reason string `json:"reason"`
	DryRun bool   `json:"dry_run"`
}

// bulkAnswer is its answer: the summary of the run (or of the plan, with
// dry_run), the plan in one line and its cost.
type bulkAnswer struct {
	*queue.ActSummary
	Plan    string  `json:"plan"`
	Dollars float64 `json:"dollars"`
}

// bulk cancels, replays or archives many tasks: by id or by a filter, each
// with the single-task conditional write (queue.PlanBulkAction and
// ActPlan.Run).
func (a *api) bulk(w http.ResponseWriter, r *http.Request) error {
	var body bulkBody
	const want = `{"op": "cancel"|"replay"|"archive", "ids": [...] or "filter": {"status": [...], "type", "shard", "since"}, "reason", "dry_run"}`
	if err := decodeBody(r, &body, want); err != nil {
		return err
	}
	req := queue.BulkActionRequest{Op: body.Op, Reason: body.Reason}
	if body.Op == queue.OpCancel && req.Reason == "" {
		req.Reason = "cancelled through the HTTP API"
	}
	if body.Op != queue.OpCancel {
		req.Reason = ""
	}
	for _, s := range body.IDs {
		id, err := queue.ParseID(s)
		if err != nil {
			return badInput("ids: %v", err)
		}
		req.IDs = append(req.IDs, id)
	}
	if f := body.Filter; f != nil {
		af := &queue.ActFilter{Type: f.Type, Shard: f.Shard}
		for _, s := range f.Status {
			st, err := queue.ParseStatus(s)
			if err != nil {
				return badInput("filter.status: %v", err)
			}
			af.Statuses = append(af.Statuses, st)
		}
		if f.Since != "" {
			since, err := time.Parse(time.RFC3339, f.Since)
			if err != nil {
				return badInput("filter.since %q: want an RFC 3339 time", f.Since)
			}
			af.Since = since
		}
		req.Filter = af
	}
	plan, err := a.q.PlanBulkAction(r.Context(), req)
	if err != nil {
		return err
	}
	ans := bulkAnswer{Plan: plan.Summary(), Dollars: plan.Dollars(store.AWSStandardPrices)}
	if body.DryRun {
		ans.ActSummary = plan.DryRun()
	} else {
		ans.ActSummary = plan.Run(r.Context(), queue.ActOptions{})
		if ans.Stopped != nil && len(ans.Done) == 0 {
			return fmt.Errorf("bulk %s: %w", body.Op, ans.Stopped)
		}
	}
	if ans.Done == nil {
		ans.Done = []uuid.UUID{}
	}
	writeJSON(w, http.StatusOK, ans)
	return nil
}
