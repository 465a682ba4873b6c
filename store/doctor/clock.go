package doctor

import (
	"context"
	"fmt"
	"time"
)

func (d *doctor) checkClock(ctx context.Context) {
	var offset, uncertainty time.Duration
	known := false
	if co, ok := d.s.(clockOffsetter); ok {
		offset, uncertainty, known = co.ClockOffset()
	}
	if !known {
		local := d.opts.Now()
		server, err := d.s.Now(ctx)
		if err != nil {
			d.add(CheckClock, StatusWarn, "cannot read the server's clock: "+err.Error(), "")
			return
		}
		offset = server.Sub(local)
	}
	abs := offset
	if abs < 0 {
		abs = -abs
	}
	dir := "ahead of"
	if offset < 0 {
		dir = "behind"
	}
	detail := fmt.Sprintf("server clock is %v %s this machine's", abs.Round(time.Millisecond), dir)
	if uncertainty > 0 {
		detail += fmt.Sprintf(" (±%v)", uncertainty.Round(time.Millisecond))
	}
	fix := "synchronise this machine's clock (NTP, e.g. systemd-timesyncd or chrony)"
	switch {
	case abs >= d.opts.ClockFail:
		d.add(CheckClock, StatusFail, detail+": S3 rejects requests signed more than 15 minutes off", fix)
	case abs >= d.opts.ClockWarn:
		d.add(CheckClock, StatusWarn, detail+": qo schedules by the server's clock, so this is safe, but local timestamps will disagree with the bucket's", fix)
	default:
		d.add(CheckClock, StatusOK, detail, "")
	}
}
