package inspect

import (
	"slices"
	"sort"

	"github.com/qo-queue/qo/monitor"
	"github.com/qo-queue/qo/monitor/view"
	"github.com/qo-queue/qo/queue"
)

// Reasons a type's pending tasks are not served.
const (
	ReasonNoWorker    = "no live worker serves it"
	ReasonTypePaused  = "type paused"
	ReasonQueuePaused = "queue paused"
)

// Unserved names the types with pending tasks that nothing will run as
// things stand, sorted by type: the queue or the type is paused, or no
// live worker (one the monitor does not judge dead) serves the type.
func Unserved(st queue.Stats, health []monitor.WorkerHealth, ctl queue.Control) []view.Unserved {
	served := map[string]bool{}
	for _, h := range health {
		if h.State == monitor.Dead {
			continue
		}
		for _, t := range h.Worker.Types {
			served[t] = true
		}
	}
	out := []view.Unserved{}
	for typ, by := range st.ByType {
		n := by[queue.StatusPending]
		if n == 0 {
			continue
		}
		u := view.Unserved{Type: typ, Pending: n}
		_, typePaused := ctl.Types[typ]
		switch {
		case ctl.Paused:
			u.Reason = ReasonQueuePaused
		case typePaused:
			u.Reason = ReasonTypePaused
		case !served[typ]:
			u.Reason = ReasonNoWorker
		default:
			continue
		}
		out = append(out, u)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Type < out[j].Type })
	return slices.Clip(out)
}
