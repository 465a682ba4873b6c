package bench

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/qo-queue/qo/store"
)

// fanTargets compares the fans with the costs queue/doc.go states
// ("Dependencies", "Workflows"): the per-edge costs, plus the requests
// that are not per edge (a workflow's marker, record and name; a child's
// own submit; the parents' own claims and completions), with 1% of slack.
func fanTargets(fans []Fan) []Target {
	var ts []Target
	at := func(name string, got, want float64) {
		ts = append(ts, Target{name, fmt.Sprintf("<= %.3g", want), got, got <= want*1.01+0.001})
	}
	for _, f := range fans {
		n := fmt.Sprintf("%s %d via %s: ", f.Shape, f.Edges, f.Via)
		np, nc := fanShape(f.Shape, f.Edges)
		e := float64(f.Edges)
		s, end := f.Submit.PerEdge, f.End.PerEdge
		switch {
		case f.Via == "workflow":
			// A task's 2 PUTs per step and no write per edge, plus the
			// idempotency marker, the record and the name.
			at(n+"submit PUT per edge", s[store.OpPut], (2*float64(np+nc)+3)/e)
			at(n+"submit GET per edge", s[store.OpGet], 0)
		case f.Shape == "fan-out":
			// Per child: 1 GET of the parent, its waiting entry and task
			// (2 PUT), the child_added write on the parent (1 GET + 1 PUT).
			at(n+"submit GET per child", s[store.OpGet], 2)
			at(n+"submit PUT per child", s[store.OpPut], 3)
		default:
			// Per parent: 1 GET at submit, the child_added write (1 GET +
			// 1 PUT); the child's own 2 PUTs once.
			at(n+"submit GET per parent", s[store.OpGet], 2)
			at(n+"submit PUT per parent", s[store.OpPut], 1+2/e)
		}
		if f.Shape == "fan-out" {
			// Per child: 1 GET + 1 PUT of the child, then its ready entry
			// (PUT) and waiting entry (DELETE); the parent's claim (1 GET,
			// 2 PUT, 1 DELETE) and complete (1 PUT, 1 DELETE) once.
			at(n+"end GET per child", end[store.OpGet], (e+1)/e)
			at(n+"end PUT per child", end[store.OpPut], (2*e+3)/e)
			at(n+"end DELETE per child", end[store.OpDelete], (e+2)/e)
		} else {
			// Per parent: its claim (1 GET, 2 PUT, 1 DELETE) and complete
			// (1 PUT, 1 DELETE); its end, an edge object (1 PUT), a LIST of
			// the child's edges and 2 reads of the child; the child's
			// release once (1 GET + 1 PUT, its ready entry, the waiting
			// entry's and the edges' removal), written again by each other
			// last writer in flight (32).
			at(n+"end PUT per parent", end[store.OpPut], 4+2*32/e)
			at(n+"bytes written per parent", f.End.PutBytesPerEdge, 16000)
			at(n+"writes of the child per parent's end", float64(f.End.BigWrites)/e, 32/e)
			ts = append(ts, Target{n + "child released exactly once", "1", float64(f.Releases), f.Releases == 1})
		}
		if f.Via == "after" {
			ts = append(ts, Target{n + "submits whose registration gave up", "0", float64(f.SubmitErrors), f.SubmitErrors == 0})
		}
		ts = append(ts, Target{n + "parent ends left to the sweeper", "0", float64(f.Unrecorded), f.Unrecorded == 0})
		ts = append(ts, Target{n + "children released", fmt.Sprint(nc), float64(f.Released), f.Released == nc})
	}
	return ts
}

// writeFans prints the dependency measurements.
func writeFans(w io.Writer, fans []Fan) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	p := func(format string, args ...any) { fmt.Fprintf(tw, format+"\n", args...) }
	p("DEPENDENCIES\tVALUE")
	for _, f := range fans {
		per, pers := "child", "children"
		if f.Shape == "fan-in" {
			per, pers = "parent", "parents"
		}
		n := fmt.Sprintf("%s, %d %s, via %s", f.Shape, f.Edges, pers, f.Via)
		s, e := f.Submit, f.End
		p("%s: submit\t%.1f s; per %s %s; %.0f B sent, %.0f B read", n, s.Seconds, per, opsLine(s.PerEdge), s.PutBytesPerEdge, s.GetBytesPerEdge)
		if f.SubmitErrors > 0 {
			p("%s: submits that left their registration to the sweeper\t%d", n, f.SubmitErrors)
		}
		end := "the parent's complete and the children told"
		if f.Shape == "fan-in" {
			end = "every parent claimed and completed, 32 at a time"
		}
		p("%s: %s\t%.1f s; per %s %s (%.2f refused); %.0f B sent, %.0f B read", n, end, e.Seconds, per, opsLine(e.PerEdge), e.RefusedPerEdge, e.PutBytesPerEdge, e.GetBytesPerEdge)
		p("%s: the longest Complete call\t%.3f s", n, f.CompleteSeconds)
		p("%s: last release by the parents' ends after the last parent's end\t%.0f ms; %d released", n, f.ReleaseMS, f.ReleasedByEnd)
		if f.Shape == "fan-in" {
			p("%s: released events of the child\t%d", n, f.Releases)
		}
		if f.Repair != nil {
			p("%s: parent ends left to the sweeper\t%d, recorded by a pass over waiting tasks in %.1f s (%s per %s); %d released in all", n, f.Unrecorded, f.Repair.Seconds, opsLine(f.Repair.PerEdge), per, f.Released)
		}
		big := "parent"
		if f.Shape == "fan-in" {
			big = "child"
		}
		p("%s: the %s's object\t%s at the end; at submit %s; at the end %s", n, big, kb(int64(f.BigBytes)), bigLine(s), bigLine(e))
	}
	tw.Flush()
}

// bigLine says how often the big object was written and read in a phase.
func bigLine(p FanPhase) string {
	line := fmt.Sprintf("%d writes (%s", p.BigWrites, kb(p.BigWriteBytes))
	if p.BigRefused > 0 {
		line += fmt.Sprintf(", %d refused", p.BigRefused)
	}
	line += fmt.Sprintf("), %d reads (%s)", p.BigReads, kb(p.BigReadBytes))
	return line
}

// kb renders a byte count in decimal units (a KB is 1,000 bytes).
func kb(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1f GB", float64(n)/1e9)
	case n >= 1e7:
		return fmt.Sprintf("%.0f MB", float64(n)/1e6)
	case n >= 1e6:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.0f KB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d B", n)
}
