package command

// What qo dev shows while it runs: the console on a terminal, else a
// banner and a status line.

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/qo-queue/qo/devenv"
	"github.com/qo-queue/qo/inspect"
	"github.com/qo-queue/qo/monitor"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/tui"
)

// devEnvLines are the shell lines that point qo (and any S3 tool) at the
// dev server: one export line for POSIX shells, PowerShell on Windows.
func devEnvLines(st *devenv.State, goos string) []string {
	vars := [][2]string{
		{"S3_ENDPOINT", st.Endpoint}, {"S3_BUCKET", st.Bucket},
		{"AWS_ACCESS_KEY_ID", st.AccessKey}, {"AWS_SECRET_ACCESS_KEY", st.SecretKey},
		{"AWS_REGION", st.Region},
	}
	if goos == "windows" {
		var lines []string
		for _, v := range vars {
			lines = append(lines, fmt.Sprintf("$env:%s=%q", v[0], v[1]))
		}
		return lines
	}
	parts := []string{"export"}
	for _, v := range vars {
		parts = append(parts, v[0]+"="+v[1])
	}
	return []string{strings.Join(parts, " ")}
}

// devTTYView is what qo dev shows on a terminal while it runs: the
// operations console (qo tui) on the dev queue. Quitting the console stops
// qo dev as Ctrl+C does. With --no-tui it is devBannerView instead.
func devTTYView(ctx context.Context, s *devSession) {
	if s.NoTUI {
		devBannerView(ctx, s)
		return
	}
	opts := tui.Options{
		Refresh:    2 * time.Second,
		Title:      fmt.Sprintf("dev · %s · bucket %s · worker %s", s.State.Endpoint, s.State.Bucket, s.WorkerID),
		QuitPrompt: devQuitPrompt,
	}
	if s.UILink != "" {
		opts.Title += " · web UI " + uiBase(s.UILink)
	}
	if s.Exposed {
		opts.Title += " · EXPOSED BEYOND LOOPBACK (--insecure-listen)"
	}
	if s.UILink != "" {
		// The console takes the screen: the link (with the dev keys, too
		// long for its title) stays above it, in the terminal's history.
		fmt.Fprintf(s.Out, "qo dev: web UI: %s\n", s.UILink)
	}
	err := tui.Run(ctx, s.Queue, opts)
	if ctx.Err() == nil && s.Stop != nil {
		fmt.Fprintln(s.Out, "qo dev: console closed: stopping (waiting for running tasks)")
		s.Stop()
	}
	if err != nil {
		fmt.Fprintf(s.Out, "qo dev: console: %v\n", err)
	}
}

// devBannerView prints what runs, the environment lines, what to try and
// how to stop, then a status line refreshed every few seconds, until ctx
// is cancelled.
func devBannerView(ctx context.Context, s *devSession) {
	w := s.Out
	st := s.State
	fmt.Fprintf(w, "qo dev is running\n\n")
	fmt.Fprintf(w, "  S3 server   %s  (bucket %s, data in %s)\n", st.Endpoint, st.Bucket, s.DataDir)
	if s.Exposed {
		fmt.Fprintf(w, "              WARNING: reachable from other machines (--insecure-listen)\n")
	}
	fmt.Fprintf(w, "  worker      %s: %s, concurrency %d, with the timeout monitor\n",
		s.WorkerID, strings.Join(s.Types, ", "), s.Concurrency)
	if s.Demo {
		fmt.Fprintf(w, "  demo        submitting sample tasks\n")
	}
	if s.UILink != "" {
		fmt.Fprintf(w, "  web UI      %s\n", s.UILink)
	}
	if s.LogPath != "" {
		fmt.Fprintf(w, "  log         %s\n", s.LogPath)
	}
	if def, err := devenv.DataDir(""); err == nil && def == s.DataDir {
		fmt.Fprintf(w, "\nOther qo commands find this server by themselves; other tools need:\n\n")
	} else {
		fmt.Fprintf(w, "\nOther qo commands find this server when %s=%s is set; or set:\n\n", devenv.EnvDataDir, s.DataDir)
	}
	for _, l := range devEnvLines(st, s.GOOS) {
		fmt.Fprintf(w, "  %s\n", l)
	}
	fmt.Fprintf(w, "\nTry:  qo submit --type echo --input '{\"hi\":1}'\n      qo list\n\n")
	fmt.Fprintf(w, "Press Ctrl+C to stop (data is kept; 'qo dev --reset' starts over).\n\n")

	model := inspect.New(s.Queue, inspect.Options{})
	t := time.NewTicker(devStatusEvery)
	defer t.Stop()
	for {
		fmt.Fprint(w, "\r\x1b[2K"+devStatusLine(ctx, s.Queue, model))
		select {
		case <-ctx.Done():
			fmt.Fprintln(w)
			return
		case <-t.C:
		}
	}
}

// devStatusLine is one line: task counts by status, live workers and the
// types nobody serves, from the read model.
func devStatusLine(ctx context.Context, q *queue.Queue, model *inspect.Model) string {
	ctx, cancel := context.WithTimeout(ctx, devStatusEvery)
	defer cancel()
	snap, err := model.Snapshot(ctx)
	now := q.Now()
	if err != nil {
		if ctx.Err() != nil {
			return now.Local().Format("15:04:05") + "  stopping"
		}
		return now.Local().Format("15:04:05") + "  status unavailable: " + oneLine(err.Error())
	}
	line := now.Local().Format("15:04:05") + "  " + countsLine(snap.Stats)
	active := 0
	for _, h := range snap.Workers {
		if h.State == monitor.Active {
			active++
		}
	}
	line += fmt.Sprintf("  |  workers %d", active)
	for _, u := range snap.Unserved {
		line += fmt.Sprintf("  |  %s unserved (%s)", oneLine(u.Type), u.Reason)
	}
	return line
}

// countsLine renders task counts by status on one line.
func countsLine(st queue.Stats) string {
	var b strings.Builder
	fmt.Fprintf(&b, "pending %d", st.ByStatus[queue.StatusPending])
	if st.Delayed > 0 {
		fmt.Fprintf(&b, " (%d later)", st.Delayed)
	}
	fmt.Fprintf(&b, "  running %d  dead letters %d", st.ByStatus[queue.StatusRunning], st.ByStatus[queue.StatusFailed])
	done, failed := 0, 0
	for _, m := range st.Recent {
		done += m.Completed
		failed += m.Failed
	}
	fmt.Fprintf(&b, "  |  last %dm: completed %d, failed attempts %d", len(st.Recent), done, failed)
	if st.Partial {
		b.WriteString("  (lower bounds)")
	}
	return b.String()
}
