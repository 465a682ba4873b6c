package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/qo-queue/qo/store/storetest"
)

// docPolicyJSON returns the JSON policies of docs/deploy.md by role (the
// Sid prefix of their statements), compacted, for bucket.
func docPolicyJSON(t *testing.T, bucket string) map[string]string {
	t.Helper()
	b, err := os.ReadFile("../docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	sidRole := regexp.MustCompile(`"Sid": "Qo(Producer|Worker|Operator|Admin|WebUI)[A-Z]`)
	out := map[string]string{}
	for _, m := range regexp.MustCompile("(?s)```json\n(.*?)```").FindAllSubmatch(b, -1) {
		role := sidRole.FindSubmatch(m[1])
		if role == nil {
			t.Fatalf("a policy of docs/deploy.md names no role:\n%s", m[1])
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, bytes.ReplaceAll(m[1], []byte("arn:aws:s3:::my-queue"), []byte("arn:aws:s3:::"+bucket))); err != nil {
			t.Fatal(err)
		}
		out[string(role[1])] = buf.String()
	}
	return out
}

// roleEnv mints credentials limited to policy through MinIO's STS (the
// test server's root keys with the policy as session policy: the session
// can do what the policy allows and nothing else) and returns the
// environment of a qo process using them.
func roleEnv(t *testing.T, endpoint, region, bucket, policy string) ([]string, aws.Credentials) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := sts.New(sts.Options{
		Region:       region,
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider(os.Getenv(storetest.EnvAccessKey), os.Getenv(storetest.EnvSecretKey), ""),
	})
	out, err := client.AssumeRole(ctx, &sts.AssumeRoleInput{
		RoleArn: aws.String("arn:aws:iam::000000000000:role/qo-test"), RoleSessionName: aws.String("qo-test"),
		DurationSeconds: aws.Int32(3600), Policy: aws.String(policy),
	})
	if err != nil {
		t.Fatalf("assume a role with policy %s: %v", policy, err)
	}
	c := out.Credentials
	env := []string{"S3_ENDPOINT=" + endpoint, "S3_BUCKET=" + bucket, "AWS_REGION=" + region,
		"AWS_ACCESS_KEY_ID=" + aws.ToString(c.AccessKeyId), "AWS_SECRET_ACCESS_KEY=" + aws.ToString(c.SecretAccessKey),
		"AWS_SESSION_TOKEN=" + aws.ToString(c.SessionToken)}
	return env, aws.Credentials{AccessKeyID: aws.ToString(c.AccessKeyId), SecretAccessKey: aws.ToString(c.SecretAccessKey), SessionToken: aws.ToString(c.SessionToken)}
}

// cleanEnv is the test's environment without S3 or AWS settings, and with
// no AWS configuration files.
func cleanEnv(t *testing.T) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "S3_") || strings.HasPrefix(name, "AWS_") || strings.HasPrefix(name, "QO_") {
			continue
		}
		env = append(env, kv)
	}
	home := t.TempDir()
	return append(env, "AWS_CONFIG_FILE="+filepath.Join(home, "aws-config"),
		"AWS_SHARED_CREDENTIALS_FILE="+filepath.Join(home, "aws-credentials"), "AWS_EC2_METADATA_DISABLED=true")
}

// TestPoliciesOnMinIO runs each role's commands with credentials limited to
// that role's policy of docs/deploy.md, on the test MinIO: qo init as the
// admin, a worker (with its embedded monitor), submits as a producer and
// operator commands as the operator all succeed, and the worker's
// credentials are refused what the admin and the operators do.
func TestPoliciesOnMinIO(t *testing.T) {
	s := storetest.MinIO(t) // skips without the test server (fails under QO_TEST_REQUIRE_S3=1)
	bucket := s.Bucket()
	cfg := storetest.S3Config(t, bucket)
	policies := docPolicyJSON(t, bucket)

	bin := filepath.Join(t.TempDir(), "qo")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	env := map[string][]string{}
	keys := map[string]aws.Credentials{}
	for _, role := range []string{"Admin", "Worker", "Producer", "Operator"} {
		if policies[role] == "" {
			t.Fatalf("docs/deploy.md has no %s policy", role)
		}
		env[role], keys[role] = roleEnv(t, cfg.Endpoint, cfg.Region, bucket, policies[role])
	}
	// Once the worker runs, its exit closes workerDone and stops the
	// command running then: nothing would finish the tasks waited for.
	base := context.Background()
	var workerDone chan struct{}
	var workerErr error
	workerGone := func() bool {
		select {
		case <-workerDone:
			return true
		default:
			return false
		}
	}
	run := func(role string, wantOK bool, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(base, 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = append(cleanEnv(t), env[role]...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if workerDone != nil && workerGone() {
			t.Fatalf("the worker exited (%v) during qo %s", workerErr, args[0])
		}
		if (err == nil) != wantOK {
			t.Fatalf("qo %s as %s: %v (want success %v)\nstdout: %s\nstderr: %s", strings.Join(args, " "), role, err, wantOK, stdout.String(), stderr.String())
		}
		return strings.TrimSpace(stdout.String())
	}

	// The admin: the init Job's command, with a retention (tagged writes).
	run("Admin", true, "init", "--shard-chars", "1", "--tasks-retention-days", "1")

	// A worker with its embedded monitor, logging every failed request.
	ctx, cancel := context.WithCancel(context.Background())
	worker := exec.CommandContext(ctx, bin, "worker")
	worker.Env = append(cleanEnv(t), append(env["Worker"], "QO_LOG_LEVEL=debug", "QO_LOG_FORMAT=json", "QO_POLL_MAX=500ms", "QO_SHARD_LEASING=true")...)
	var logs syncBuffer
	worker.Stdout, worker.Stderr = &logs, &logs
	if err := worker.Start(); err != nil {
		t.Fatal(err)
	}
	workerDone = make(chan struct{})
	workerCtx, workerCancel := context.WithCancel(context.Background())
	go func() {
		workerErr = worker.Wait()
		close(workerDone)
		workerCancel()
	}()
	base = workerCtx
	defer func() {
		cancel()
		<-workerDone
		if t.Failed() {
			t.Logf("worker log:\n%s", logs.String())
		}
	}()

	// The producer: a task, a keyed one twice, an offloaded input, one that
	// fails for good, a child of a task, a workflow.
	echo := run("Producer", true, "submit", "--type", "echo", "--input", `{"n":1}`)
	keyed := run("Producer", true, "submit", "--type", "echo", "--input", `{"n":2}`, "--idempotency-key", "k1")
	if again := run("Producer", true, "submit", "--type", "echo", "--input", `{"n":2}`, "--idempotency-key", "k1"); again != keyed {
		t.Errorf("keyed resubmit: %s, want %s", again, keyed)
	}
	bigInput := filepath.Join(t.TempDir(), "big.json") // over the 256 KiB offload threshold
	if err := os.WriteFile(bigInput, []byte(`{"pad":"`+strings.Repeat("x", 300<<10)+`"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	big := run("Producer", true, "submit", "--type", "echo", "--input-file", bigInput)
	failed := run("Producer", true, "submit", "--type", "fail", "--retries", "0")
	child := run("Producer", true, "submit", "--type", "echo", "--after", echo)
	wf := filepath.Join(t.TempDir(), "wf.json")
	if err := os.WriteFile(wf, []byte(`{"name":"roles","steps":[{"name":"a","type":"echo","input":{"x":1}},{"name":"b","type":"echo","after":["a"],"input_from":{"y":"a.output"}}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	run("Producer", true, "submit", "--workflow", wf)
	run("Producer", true, "wait", "--timeout", "90s", echo, keyed, big, child)
	run("Producer", true, "wait", "--timeout", "90s", "--workflow", "roles")
	run("Producer", false, "wait", "--timeout", "90s", failed) // failed: a non-zero exit

	// The operator: what qo serve and operators at a terminal do.
	run("Operator", true, "stats")
	run("Operator", true, "list")
	run("Operator", true, "history", echo)
	run("Operator", true, "workers")
	run("Operator", true, "workflow", "show", "roles")
	run("Operator", true, "pause", "--all")
	run("Operator", true, "resume", "--all")
	run("Operator", true, "schedule", "create", "roles", "--cron", "@hourly", "--type", "echo")
	run("Operator", true, "schedule", "trigger", "roles")
	run("Operator", true, "schedule", "delete", "roles")
	// With its type paused the replayed task stays pending for the cancel
	// (the worker would otherwise run and fail it again first). A worker
	// claims with switches at most a second old (worker/control.go,
	// controlFresh): once a second has passed since the pause, any claim
	// it makes has read it.
	run("Operator", true, "pause", "fail")
	time.Sleep(1100 * time.Millisecond) // the pause's stated bound, not a guess
	run("Operator", true, "replay", failed)
	run("Operator", true, "cancel", failed)
	run("Operator", true, "resume", "fail")
	run("Operator", true, "archive", echo)

	// What other roles do is refused to the worker's and producer's keys.
	// (MinIO lets s3:ListBucket list versions and s3:GetObject read them,
	// so the operator's history rights cannot be told apart here.)
	run("Worker", false, "pause", "--all")
	run("Producer", false, "pause", "--all")
	rawClient := func(role string) *s3.Client {
		return s3.New(s3.Options{Region: cfg.Region, BaseEndpoint: aws.String(cfg.Endpoint), UsePathStyle: true,
			Credentials: credentials.StaticCredentialsProvider{Value: keys[role]}})
	}
	w := rawClient("Worker")
	rctx, rcancel := context.WithTimeout(context.Background(), time.Minute)
	defer rcancel()
	denied := map[string]error{}
	_, denied["PutBucketVersioning"] = w.PutBucketVersioning(rctx, &s3.PutBucketVersioningInput{Bucket: aws.String(bucket),
		VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusSuspended}})
	_, denied["PutObject queue.json"] = w.PutObject(rctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("queue.json"), Body: strings.NewReader(`{"format":99}`)})
	_, denied["PutObject ui/index.html"] = w.PutObject(rctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("ui/index.html"), Body: strings.NewReader("x")})
	_, denied["DeleteObject tasks/"] = w.DeleteObject(rctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String("tasks/0/x.json")})
	for op, err := range denied {
		if err == nil || !strings.Contains(err.Error(), "AccessDenied") {
			t.Errorf("the worker's keys: %s: %v, want AccessDenied", op, err)
		}
	}

	// Nothing the worker and its monitor did was refused, best-effort
	// writes included (logged at debug level).
	if workerGone() {
		t.Fatalf("the worker exited early: %v", workerErr)
	}
	cancel()
	<-workerDone
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "AccessDenied") || strings.Contains(line, "Access Denied") {
			t.Errorf("the worker was refused a request: %s", line)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for a process's stdout and stderr at
// once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
