package queue

import (
	"context"
	"os"
	"os/user"
	"strings"
)

// Actor names who performs an operator action from this process, as
// "user@host" (the login name and the host name; "unknown" for either one
// the system does not tell). Interfaces put it in the reasons they record
// with cancels and pauses, so a task's history and control.json's versions
// say who acted and where, not only with which tool.
func Actor() string {
	name := "unknown"
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	} else if s := os.Getenv("USER"); s != "" {
		name = s
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	return strings.ReplaceAll(name+"@"+host, "\n", " ")
}

// ActorReason is the reason an operator action records: the reason given
// (or what, when none was), followed by who acted and with which tool,
// e.g. "mail outage (alice@ops-1, qo pause)".
func ActorReason(reason, what, tool string) string {
	if strings.TrimSpace(reason) == "" {
		reason = what
	}
	return reason + " (" + Actor() + ", " + tool + ")"
}

type actorKey struct{}

// WithActor returns ctx carrying who performs the operator actions done
// with it, as they are recorded: "user@host, tool" from the CLI and the
// console (CLIActor), what the server knows of its caller from qo serve.
// Cancel, Replay, Archive, RequeueNow, bulk actions, Pause, Resume and
// the schedule writes record it (a task's actor field, control.json's and
// a schedule's actor); without it they record none.
func WithActor(ctx context.Context, actor string) context.Context {
	return context.WithValue(ctx, actorKey{}, oneLine(actor))
}

// ActorFrom is the actor WithActor put in ctx, or "".
func ActorFrom(ctx context.Context) string {
	s, _ := ctx.Value(actorKey{}).(string)
	return s
}

// CLIActor is the actor of a command-line tool run in this process:
// "user@host, tool", e.g. "alice@ops-1, qo cancel".
func CLIActor(tool string) string { return Actor() + ", " + tool }

// oneLine keeps a recorded actor on one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
