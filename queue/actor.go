package queue

import (
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
