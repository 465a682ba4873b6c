package worker

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/joho/godotenv"

	"github.com/qo-queue/qo/queue"
)

// The environment of an exec handler is built, not inherited: a worker
// holds the bucket's credentials (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
// ...) and a handler that prints or logs its environment would store them
// in the bucket. The child gets, in this order (a later value wins):
//
//  1. the worker's values of the variables of BaseEnv (PATH, HOME, the
//     locale, ...), when set;
//  2. the worker's values of ExecOptions.PassEnv, when set;
//  3. ExecOptions.Env (NAME=VALUE);
//  4. the task variables qo sets (QO_TASK_ID, ...), which nothing overrides.
//
// The task variables include the W3C trace context of the task, when its
// metadata holds one (queue.MetaTraceparent, queue.MetaTracestate), as
// TRACEPARENT and TRACESTATE: the names OpenTelemetry SDKs read to
// continue a trace in a child process. They are added on purpose, from
// the task and not the worker: a worker's own TRACEPARENT (if it runs
// under a traced parent) never leaks into its handlers.

// ErrExecEnv marks a bad exec handler environment setting: an invalid
// variable name, a malformed entry or an unreadable env file.
var ErrExecEnv = errors.New("invalid exec handler environment")

// baseEnvUnix and baseEnvWindows are what every exec handler inherits. A
// trailing '*' matches any suffix (LC_ALL, LC_CTYPE, ...).
var (
	baseEnvUnix = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_*", "TZ", "TMPDIR", "TERM",
		"SSL_CERT_FILE", "SSL_CERT_DIR"}
	baseEnvWindows = []string{"PATH", "PATHEXT", "SYSTEMROOT", "SYSTEMDRIVE", "WINDIR", "COMSPEC", "TEMP", "TMP",
		"USERPROFILE", "USERNAME", "HOMEDRIVE", "HOMEPATH", "APPDATA", "LOCALAPPDATA", "PROGRAMDATA", "PROGRAMFILES",
		"NUMBER_OF_PROCESSORS", "PROCESSOR_ARCHITECTURE", "TZ"}
)

// BaseEnv lists the variables every exec handler inherits from the
// worker's environment (a trailing '*' matches any suffix). Anything else
// reaches a handler only through ExecOptions.PassEnv or ExecOptions.Env.
func BaseEnv() []string {
	if runtime.GOOS == "windows" {
		return slices.Clone(baseEnvWindows)
	}
	return slices.Clone(baseEnvUnix)
}

// envNameRE is the portable variable name: what every shell can read.
var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ValidateEnvName checks an environment variable name: letters, digits
// and _, not starting with a digit.
func ValidateEnvName(name string) error {
	if !envNameRE.MatchString(name) {
		return fmt.Errorf("%w: %s", ErrExecEnv, badName(name))
	}
	return nil
}

func badName(name string) string {
	return fmt.Sprintf("%q is not a variable name: use letters, digits and _, not starting with a digit (e.g. DATABASE_URL)", name)
}

// ParseEnvEntry splits one --env value: "NAME" passes the worker's NAME
// through (value "", set false), "NAME=VALUE" sets it (set true).
func ParseEnvEntry(s string) (name, value string, set bool, err error) {
	name, value, set = strings.Cut(s, "=")
	if !envNameRE.MatchString(name) {
		return "", "", false, fmt.Errorf("%w: %q: %s", ErrExecEnv, s, badName(name))
	}
	return name, value, set, nil
}

// Validate checks PassEnv and Env, so a mistake fails at startup rather
// than on every task.
func (o ExecOptions) Validate() error {
	for _, name := range o.PassEnv {
		if err := ValidateEnvName(name); err != nil {
			return fmt.Errorf("exec options: PassEnv: %w", err)
		}
	}
	for _, kv := range o.Env {
		name, _, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("exec options: Env: %w: %q has no '=': want NAME=VALUE (PassEnv passes a variable of the worker through)", ErrExecEnv, kv)
		}
		if err := ValidateEnvName(name); err != nil {
			return fmt.Errorf("exec options: Env: %w", err)
		}
	}
	return nil
}

// taskEnv is the task variables of an exec handler of t run by worker
// workerID.
func taskEnv(t *queue.Task, workerID string) []string {
	env := []string{
		"QO_TASK_ID=" + t.ID.String(),
		"QO_TASK_TYPE=" + t.Type,
		"QO_ATTEMPT=" + strconv.Itoa(t.Attempt),
		"QO_WORKER_ID=" + workerID,
		"QO_TASK_TIMEOUT_SECONDS=" + strconv.Itoa(t.TimeoutSeconds),
	}
	if t.TaskKey != "" {
		env = append(env, "QO_TASK_KEY="+t.TaskKey)
	}
	if v := t.Metadata[queue.MetaTraceparent]; v != "" {
		env = append(env, "TRACEPARENT="+v)
		if s := t.Metadata[queue.MetaTracestate]; s != "" {
			env = append(env, "TRACESTATE="+s)
		}
	}
	return env
}

// childEnv builds an exec handler's environment from the worker's (as
// os.Environ gives it) and the options; task holds the QO_* variables qo
// sets, added last. A variable appears once, with the value of its last
// source.
func childEnv(worker []string, o ExecOptions, task []string) []string {
	lookup := map[string]string{}
	var order []string
	fold := func(s string) string { return s }
	if runtime.GOOS == "windows" {
		fold = strings.ToUpper // names are case-insensitive there
	}
	for _, kv := range worker {
		name, value, ok := strings.Cut(kv, "=")
		if ok && name != "" {
			lookup[fold(name)] = name + "=" + value
			order = append(order, name)
		}
	}
	out := map[string]string{}
	var names []string
	put := func(kv string) {
		name, _, _ := strings.Cut(kv, "=")
		k := fold(name)
		if _, seen := out[k]; !seen {
			names = append(names, k)
		}
		out[k] = kv
	}
	base := BaseEnv()
	for _, name := range order {
		if inBase(fold(name), base) {
			put(lookup[fold(name)])
		}
	}
	for _, name := range o.PassEnv {
		if kv, ok := lookup[fold(name)]; ok {
			put(kv)
		}
	}
	for _, kv := range o.Env {
		put(kv)
	}
	for _, kv := range task {
		put(kv)
	}
	env := make([]string, 0, len(names))
	for _, k := range names {
		env = append(env, out[k])
	}
	return env
}

func inBase(name string, base []string) bool {
	for _, b := range base {
		if prefix, wild := strings.CutSuffix(b, "*"); wild && strings.HasPrefix(name, prefix) || b == name {
			return true
		}
	}
	return false
}

// ReadEnvFile reads a dotenv file (NAME=VALUE lines, # comments, optional
// "export ", single or double quotes, ${NAME} of earlier lines) and
// returns its variables as sorted NAME=VALUE entries for ExecOptions.Env.
// Errors name the file and the line, never a value (values are often
// secrets).
func ReadEnvFile(path string) ([]string, error) {
	body, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: env file %s does not exist: give the path of a dotenv file (NAME=VALUE lines)", ErrExecEnv, path)
		}
		return nil, fmt.Errorf("%w: read env file: %w", ErrExecEnv, err)
	}
	body = bytes.ReplaceAll(body, []byte("\r\n"), []byte("\n"))
	vars, err := godotenv.UnmarshalBytes(body)
	if err != nil {
		return nil, envFileError(path, body, err)
	}
	names := make([]string, 0, len(vars))
	for name := range vars {
		names = append(names, name)
	}
	slices.Sort(names)
	env := make([]string, 0, len(names))
	for _, name := range names {
		if name == "" {
			return nil, fmt.Errorf("%w: env file %s: a line has no NAME before its '=' (or no '=' at all): want NAME=VALUE", ErrExecEnv, path)
		}
		if !envNameRE.MatchString(name) {
			return nil, fmt.Errorf("%w: env file %s:%s %s", ErrExecEnv, path, lineOf(body, name), badName(name))
		}
		env = append(env, name+"="+vars[name])
	}
	return env, nil
}

// dotenvBadName matches the parser's message for a bad variable name: the
// character, and the rest of the file from the bad line on.
var dotenvBadName = regexp.MustCompile(`(?s)^unexpected character ("(?:[^"\\]|\\.)*") in variable name near ("(?:[^"\\]|\\.)*")$`)

// envFileError rewrites a dotenv parse error to name the line, without
// echoing the file's contents.
func envFileError(path string, body []byte, err error) error {
	const fix = "want NAME=VALUE lines (letters, digits and _ in names; quote values with spaces; # starts a comment)"
	msg := err.Error()
	what, at := "malformed line", -1
	if m := dotenvBadName.FindStringSubmatch(msg); m != nil {
		char, _ := strconv.Unquote(m[1])
		rest, _ := strconv.Unquote(m[2])
		what = fmt.Sprintf("unexpected %q in a variable name", char)
		if char == "\n" {
			what = "a line without '='"
		}
		if rest != "" && bytes.HasSuffix(body, []byte(rest)) {
			at = len(body) - len(rest)
		}
	} else if rest, ok := strings.CutPrefix(msg, "unterminated quoted value "); ok {
		what = "a quoted value is not closed"
		at = bytes.Index(body, []byte(rest))
	}
	where := ""
	if at >= 0 {
		where = fmt.Sprintf(" line %d:", 1+bytes.Count(body[:at], []byte("\n")))
	}
	return fmt.Errorf("%w: env file %s:%s %s: %s", ErrExecEnv, path, where, what, fix)
}

// lineOf returns " line N:" for the line of body that sets name, or "".
func lineOf(body []byte, name string) string {
	for i, line := range strings.Split(string(body), "\n") {
		line = strings.TrimLeft(line, " \t")
		if rest, ok := strings.CutPrefix(line, "export "); ok {
			line = strings.TrimLeft(rest, " \t")
		}
		if rest, ok := strings.CutPrefix(line, name); ok {
			if rest = strings.TrimLeft(rest, " \t"); strings.HasPrefix(rest, "=") || strings.HasPrefix(rest, ":") {
				return fmt.Sprintf(" line %d:", i+1)
			}
		}
	}
	return ""
}
