package command

// The command line's user-visible behaviour, written as scripts:
// testdata/script/*.txtar, one small story each (see testscript's
// documentation for the language). `qo` in a script is this test binary
// running Run, in its own process, as the released binary would; each
// script gets its own fresh, versioned bucket on the test S3 server and the
// variables that point qo at it. Run one with
//
//	go test ./command -run TestScripts/NAME
//
// Commands added to the language (see scriptCommands):
//
//	exits CODE PROGRAM ARGS...      run PROGRAM, require exit code CODE
//	capture NAME [FIELD]            set $NAME to the last stdout, or to
//	                                FIELD of it as JSON (tasks.0.id)
//	waitfor REGEXP PROGRAM ARGS...  run PROGRAM until its stdout matches

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/qo-queue/qo/store/s3store"
	"github.com/qo-queue/qo/store/storetest"
)

// TestMain lets the test binary run as `qo` for the scripts: testscript
// puts a copy of it named qo first in their PATH.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"qo": func() { os.Exit(Run(os.Args, OSEnv(), Build{})) },
	})
}

func TestScripts(t *testing.T) {
	s3 := storetest.S3Config(t, "") // skips (or fails) without a test S3 server
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		Setup:               func(env *testscript.Env) error { return setupScript(env, s3) },
		Cmds:                scriptCommands,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
	})
}

// setupScript creates the script's bucket, removed with every version when
// the script ends, and points qo at it through the environment, as a user
// would.
func setupScript(env *testscript.Env, cfg s3store.Config) error {
	cfg.Bucket = storetest.BucketName()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := s3store.New(ctx, cfg)
	if err != nil {
		return err
	}
	if err := s.CreateBucket(ctx); err != nil {
		return fmt.Errorf("bucket for the script: %w", err)
	}
	remove := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := s.RemoveBucket(ctx); err != nil {
			env.T().Log("cleanup of bucket " + cfg.Bucket + ": " + err.Error())
		}
	}
	// After the script's background commands ended (a failed script's
	// deferred functions run before they are stopped): the subtest's
	// cleanup, which testscript's T does not show but its *testing.T has.
	if t, ok := env.T().(interface{ Cleanup(func()) }); ok {
		t.Cleanup(remove)
	} else {
		env.Defer(remove)
	}
	if err := s.EnableVersioning(ctx); err != nil {
		return fmt.Errorf("bucket for the script: %w", err)
	}
	if os.Getenv("GORACE") == "" {
		// A race-enabled process sleeps a second before it exits (for
		// reports from other goroutines); the scripts start hundreds.
		env.Setenv("GORACE", "atexit_sleep_ms=20")
	}
	env.Setenv("S3_ENDPOINT", cfg.Endpoint)
	env.Setenv("S3_BUCKET", cfg.Bucket)
	env.Setenv("S3_REGION", cfg.Region)
	env.Setenv("AWS_ACCESS_KEY_ID", cfg.AccessKey)
	env.Setenv("AWS_SECRET_ACCESS_KEY", cfg.SecretKey)
	env.Setenv("IMDS_403", forbiddingIMDS())
	return nil
}

// forbiddingIMDS is the URL of an instance metadata service that answers
// 403 to everything, as some hosts' do: scripts point
// AWS_EC2_METADATA_SERVICE_ENDPOINT at it to check what the SDK's
// credential chain makes of it. One server serves every script of the
// test binary.
var forbiddingIMDS = sync.OnceValue(func() string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
	}))
	return srv.URL
})

var scriptCommands = map[string]func(ts *testscript.TestScript, neg bool, args []string){
	"exits":   cmdExits,
	"capture": cmdCapture,
	"waitfor": cmdWaitFor,
	"freeaddr": func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: freeaddr NAME")
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		ts.Check(err)
		ts.Setenv(args[0], l.Addr().String())
		ts.Check(l.Close())
	},
	"waithttp": cmdWaitHTTP,
}

// waithttp URL polls URL until it answers 200 (a server started in the
// background is up), giving up after waitForLimit.
func cmdWaitHTTP(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: waithttp URL")
	}
	deadline := time.Now().Add(waitForLimit)
	pause := 20 * time.Millisecond
	for {
		resp, err := http.Get(args[0])
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		if time.Now().After(deadline) {
			ts.Fatalf("gave up after %v waiting for %s to answer 200 (last: %v)", waitForLimit, args[0], err)
		}
		time.Sleep(pause) // between polls of the condition
		pause = min(2*pause, 500*time.Millisecond)
	}
}

// exits CODE PROGRAM ARGS... runs PROGRAM like exec and fails the script
// unless it exits with CODE; its stdout and stderr are then matched as
// usual.
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits CODE PROGRAM [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exits: %q is not an exit code", args[0])
	}
	got := exitStatus(ts, ts.Exec(args[1], args[2:]...))
	ts.Logf("[exit %d]", got)
	if got != want {
		ts.Fatalf("%s exited with %d, want %d", args[1], got, want)
	}
}

// exitStatus is the exit code err (from TestScript.Exec) stands for.
func exitStatus(ts *testscript.TestScript, err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		ts.Fatalf("%v", err)
	}
	return ee.ExitCode()
}

// capture NAME [FIELD] sets $NAME to the last command's stdout, trimmed,
// or, with FIELD, to that field of the stdout as JSON: a dotted path of
// object keys and array indexes (ids.0). A string is taken as is, anything
// else as JSON.
func cmdCapture(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: capture NAME [FIELD]")
	}
	out := strings.TrimSpace(ts.ReadFile("stdout"))
	if len(args) == 1 {
		if out == "" {
			ts.Fatalf("capture %s: stdout is empty", args[0])
		}
		ts.Setenv(args[0], out)
		return
	}
	var v any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		ts.Fatalf("capture %s: stdout is not JSON: %v", args[0], err)
	}
	for _, part := range strings.Split(args[1], ".") {
		switch x := v.(type) {
		case map[string]any:
			f, ok := x[part]
			if !ok {
				ts.Fatalf("capture %s: no field %q in %s", args[0], args[1], out)
			}
			v = f
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(x) {
				ts.Fatalf("capture %s: no element %q in %s", args[0], args[1], out)
			}
			v = x[i]
		default:
			ts.Fatalf("capture %s: no field %q in %s", args[0], args[1], out)
		}
	}
	s, ok := v.(string)
	if !ok {
		b, _ := json.Marshal(v)
		s = string(b)
	}
	ts.Setenv(args[0], s)
}

// waitForLimit bounds a waitfor: generous, since the machine may be
// shared, and only ever reached when the script fails anyway.
const waitForLimit = time.Minute

// waitfor REGEXP PROGRAM ARGS... runs PROGRAM until its stdout matches
// REGEXP (multi-line mode, as stdout's), so a script waits for a state
// instead of sleeping. It gives up after waitForLimit.
func cmdWaitFor(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: waitfor REGEXP PROGRAM [ARGS...]")
	}
	re, err := regexp.Compile("(?m)" + args[0])
	if err != nil {
		ts.Fatalf("waitfor: %v", err)
	}
	deadline := time.Now().Add(waitForLimit)
	pause := 20 * time.Millisecond
	for {
		err := ts.Exec(args[1], args[2:]...)
		if re.MatchString(ts.ReadFile("stdout")) {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("gave up after %v waiting for %s to print %q (last error: %v)", waitForLimit, args[1], args[0], err)
		}
		time.Sleep(pause) // between polls of the condition
		pause = min(2*pause, 500*time.Millisecond)
	}
}
