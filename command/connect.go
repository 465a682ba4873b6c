package command

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/connect"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/s3store"
)

// envAllowNoVersioning lets qo run on a bucket without versioning (no task
// history).
const envAllowNoVersioning = connect.EnvAllowNoVersioning

// connectTimeout bounds the first request to the bucket, so a black-holed
// endpoint fails in seconds rather than after the SDK's retries.
const connectTimeout = 20 * time.Second

// allowNoVersioning reports whether QO_ALLOW_NO_VERSIONING is set to 1 (or
// true).
func allowNoVersioning() bool { return connect.AllowNoVersioning(os.LookupEnv) }

// storeConfig builds the S3 configuration from the connection flags (and
// their environment variables) with connect's rules: credentials are left
// to the AWS chain, and without a bucket or an endpoint a running `qo dev`
// is used (see connect.DiscoverDev).
func storeConfig(c *cli.Context) (s3store.Config, error) {
	s := connect.Settings{
		Bucket:   connString(c, "bucket"),
		Endpoint: connString(c, "endpoint"),
		Region:   connString(c, "region"),
		Profile:  connString(c, "profile"),
	}
	s.PathStyle, s.PathStyleSet = connBool(c, "path-style")
	cfg, err := s.StoreConfig(c.Context)
	if errors.Is(err, connect.ErrNoBucket) {
		return cfg, usageError("no bucket configured: set S3_BUCKET or pass --bucket NAME (or start a local one with 'qo dev')")
	}
	return cfg, err
}

// newStore returns the configured store without sending a request.
func newStore(c *cli.Context) (*s3store.Store, s3store.Config, error) {
	cfg, err := storeConfig(c)
	if err != nil {
		return nil, cfg, err
	}
	if fn, ok := c.Context.Value(s3ObserverKey{}).(func(store.Op, time.Duration, error)); ok {
		cfg.Observe = fn
	}
	s, err := s3store.New(c.Context, cfg)
	if err != nil {
		// Only configuration mistakes fail here (a malformed endpoint, a
		// key without its secret, a broken AWS profile).
		return nil, cfg, usageError("%w", err)
	}
	return s, cfg, nil
}

type s3ObserverKey struct{}

// withS3Observer makes the stores opened under ctx report every request to
// fn (the metrics' latency histogram).
func withS3Observer(ctx context.Context, fn func(store.Op, time.Duration, error)) context.Context {
	return context.WithValue(ctx, s3ObserverKey{}, fn)
}

// openStore connects to the configured bucket and checks it is usable:
// reachable, credentials accepted, bucket present and versioned. A bucket
// without versioning is refused unless QO_ALLOW_NO_VERSIONING=1, which
// prints a warning instead (task history is unavailable then).
//
// Every failure is one line naming the problem and the fix, with exit code
// exitStorage (or exitUsage for a configuration mistake).
func openStore(c *cli.Context) (*s3store.Store, error) {
	s, cfg, err := newStore(c)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(c.Context, connectTimeout)
	defer cancel()
	on, err := s.Versioning(ctx)
	if err != nil {
		return nil, connError(c.Context, cfg, err)
	}
	if !on {
		if !allowNoVersioning() {
			return nil, versioningOffError(cfg)
		}
		fmt.Fprintf(c.App.ErrWriter, "qo: warning: bucket %q has versioning off (%s=1): task history is unavailable\n",
			cfg.Bucket, envAllowNoVersioning)
	}
	return s, nil
}

func endpointName(cfg s3store.Config) string {
	if cfg.Endpoint == "" {
		return "AWS S3"
	}
	return cfg.Endpoint
}

func versioningOffError(cfg s3store.Config) error {
	return storageError("bucket %q at %s has versioning off, and qo keeps task history in object versions: "+
		"enable it (aws s3api put-bucket-versioning --bucket %s --versioning-configuration Status=Enabled, or mc version enable ALIAS/%s), "+
		"or set %s=1 to run without history",
		cfg.Bucket, endpointName(cfg), cfg.Bucket, cfg.Bucket, envAllowNoVersioning)
}

// connError turns the error of the first request to the bucket into one
// line saying what is wrong and how to fix it. parent is the command's
// context (its cancellation is an interrupt, not a timeout).
func connError(parent context.Context, cfg s3store.Config, err error) error {
	endpoint := endpointName(cfg)
	var se *s3store.Error
	errors.As(err, &se)
	switch {
	case parent.Err() != nil:
		return err
	case errors.Is(err, context.DeadlineExceeded):
		return storageKind(store.ErrUnreachable, "no answer from S3 at %s within %v: check --endpoint (S3_ENDPOINT) and that the server is running and reachable from here",
			endpoint, connectTimeout)
	case errors.Is(err, store.ErrUnreachable):
		return storageKind(store.ErrUnreachable, "cannot reach S3 at %s (%s): check --endpoint (S3_ENDPOINT) and that the server is running",
			endpoint, netCause(err))
	case errors.Is(err, store.ErrAccessDenied) && se != nil && se.Status == 0:
		return storageKind(store.ErrAccessDenied, "no S3 credentials found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or choose a profile with --profile (AWS_PROFILE)")
	case errors.Is(err, store.ErrAccessDenied):
		return storageKind(store.ErrAccessDenied, "S3 at %s refused the credentials for bucket %q (%s): check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or --profile / AWS_PROFILE) and their permissions on the bucket",
			endpoint, cfg.Bucket, httpStatus(se))
	case errors.Is(err, store.ErrBucketNotFound):
		return storageKind(store.ErrBucketNotFound, "bucket %q does not exist at %s: create it with 'qo init --create-bucket', or check --bucket (S3_BUCKET)",
			cfg.Bucket, endpoint)
	case se != nil && se.Status == 400:
		return storageError("S3 at %s rejected a request for bucket %q as malformed (%s): check the bucket name (--bucket, S3_BUCKET) and the region (--region, S3_REGION)",
			endpoint, cfg.Bucket, httpStatus(se))
	case se != nil && (se.Status == 301 || se.Status == 307):
		return storageError("bucket %q is in another region than %q (%s): set --region (S3_REGION) to the bucket's region",
			cfg.Bucket, regionName(cfg), httpStatus(se))
	default:
		return storageError("S3 at %s failed for bucket %q: %w", endpoint, cfg.Bucket, err)
	}
}

// netCause is the innermost network error's text, e.g. "dial tcp
// 127.0.0.1:9: connect: connection refused".
func netCause(err error) string {
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		return opErr.Error()
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return dnsErr.Error()
	}
	var se *s3store.Error
	if errors.As(err, &se) && se.Err != nil {
		return se.Err.Error()
	}
	return err.Error()
}

func regionName(cfg s3store.Config) string {
	if cfg.Region == "" {
		return s3store.DefaultRegion
	}
	return cfg.Region
}

func httpStatus(se *s3store.Error) string {
	if se == nil {
		return "access denied"
	}
	if se.Code != "" {
		return fmt.Sprintf("HTTP %d %s", se.Status, se.Code)
	}
	return fmt.Sprintf("HTTP %d", se.Status)
}

// openedQueues are the queues an app's commands opened: before the app
// returns, the children of the tasks its commands ended are told
// (settleQueues). One per app (App.Metadata), as the Env.
type openedQueues struct {
	mu sync.Mutex
	qs []*queue.Queue
}

const openedKey = "qo.opened"

func (o *openedQueues) add(q *queue.Queue) {
	if o == nil {
		return
	}
	o.mu.Lock()
	o.qs = append(o.qs, q)
	o.mu.Unlock()
}

func (o *openedQueues) take() []*queue.Queue {
	if o == nil {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	qs := o.qs
	o.qs = nil
	return qs
}

func openedOf(c *cli.Context) *openedQueues {
	if c == nil || c.App == nil {
		return nil
	}
	o, _ := c.App.Metadata[openedKey].(*openedQueues)
	return o
}

// settleQueues waits, for at most 2 minutes, until the children of the
// tasks this app's commands ended have been told (queue.Settle: a task
// with more than 16 children tells them in the background); past that the
// sweeper tells the rest.
func settleQueues(c *cli.Context) error {
	qs := openedOf(c).take()
	if len(qs) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Context), 2*time.Minute)
	defer cancel()
	for _, q := range qs {
		if err := q.Settle(ctx); err != nil {
			fmt.Fprintf(c.App.ErrWriter, "qo: not every child of the tasks this command ended was told (the sweeper will): %v\n", err)
		}
	}
	return nil
}

// openQueue connects to the bucket and opens the queue in it.
func openQueue(c *cli.Context) (*queue.Queue, error) {
	return openQueueLogged(c, stderrLogger(c))
}

// openQueueLogged is openQueue for long-running commands that have their own
// logger (so the queue's warnings share its format).
func openQueueLogged(c *cli.Context, log *slog.Logger) (*queue.Queue, error) {
	s, err := envOf(c).OpenStore(c)
	if err != nil {
		return nil, err
	}
	q, err := queue.Open(c.Context, s, queue.Options{Logger: log})
	if err == nil {
		openedOf(c).add(q)
	}
	if errors.Is(err, queue.ErrNotInitialized) {
		return nil, fmt.Errorf("bucket %q holds no qo queue (no queue.json): run 'qo init' first: %w", connString(c, "bucket"), queue.ErrNotInitialized)
	}
	if errors.Is(err, queue.ErrLayoutOutdated) {
		return nil, fmt.Errorf("bucket %q: %w", connString(c, "bucket"), err)
	}
	return q, err
}

// connectionFlags returns fresh instances of the connection flags (a flag
// value may not be shared between the app and a command).
func connectionFlags() []cli.Flag {
	const cat = "Connection"
	return []cli.Flag{
		&cli.StringFlag{Name: "endpoint", Category: cat, EnvVars: []string{connect.EnvEndpoint},
			Usage: "S3 endpoint `URL`, e.g. http://127.0.0.1:9000 (empty: AWS S3)"},
		&cli.StringFlag{Name: "bucket", Category: cat, EnvVars: []string{connect.EnvBucket},
			Usage: "the queue's bucket `NAME`"},
		&cli.StringFlag{Name: "region", Category: cat, EnvVars: []string{connect.EnvRegion, connect.EnvAWSRegion},
			Usage: "S3 region `NAME` (default us-east-1)"},
		&cli.BoolFlag{Name: "path-style", Category: cat, EnvVars: []string{connect.EnvPathStyle},
			Usage: "address the bucket as ENDPOINT/BUCKET (default: on when --endpoint is set)"},
		&cli.StringFlag{Name: "profile", Category: cat, EnvVars: []string{connect.EnvProfile},
			Usage: "shared AWS config `PROFILE` for credentials"},
	}
}

// connString returns the value of a connection flag, wherever on the
// command line it was given (before or after the command name; after wins),
// else its environment variable, else its default.
func connString(c *cli.Context, name string) string {
	base, _ := connEnv(name)
	if ctx := flagSetIn(c, name, func(ctx *cli.Context) bool { return ctx.String(name) != base }); ctx != nil {
		return ctx.String(name)
	}
	return base
}

// connBool is connString for a boolean flag; set reports whether it was
// given at all (on the command line or in the environment).
func connBool(c *cli.Context, name string) (value, set bool) {
	env, inEnv := connEnv(name)
	base := false
	if inEnv {
		base, _ = strconv.ParseBool(env) // urfave/cli already refused a malformed value
	}
	if ctx := flagSetIn(c, name, func(ctx *cli.Context) bool { return ctx.Bool(name) != base }); ctx != nil {
		return ctx.Bool(name), true
	}
	return base, inEnv
}

// connEnv returns the value of the first environment variable of
// connection flag name that is set (the one urfave/cli applies).
func connEnv(name string) (string, bool) {
	for _, f := range connectionFlags() {
		if f.Names()[0] != name {
			continue
		}
		if ev, ok := f.(interface{ GetEnvVars() []string }); ok {
			for _, v := range ev.GetEnvVars() {
				if val, ok := os.LookupEnv(v); ok {
					return strings.TrimSpace(val), true
				}
			}
		}
	}
	return "", false
}

// flagSetIn returns the innermost context in which flag name was set and
// fromCommandLine holds. urfave/cli reports flags set by their environment
// variable as set in every context that defines them, so callers tell the
// command line apart by comparing with the environment's value.
func flagSetIn(c *cli.Context, name string, fromCommandLine func(*cli.Context) bool) *cli.Context {
	for _, ctx := range c.Lineage() {
		if ctx.App == nil {
			continue // the root context has no flags
		}
		for _, n := range ctx.LocalFlagNames() {
			if n == name && fromCommandLine(ctx) {
				return ctx
			}
		}
	}
	return nil
}
