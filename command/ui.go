package command

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/devenv"
	"github.com/qo-queue/qo/httpapi"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/s3store"
	"github.com/qo-queue/qo/webui"
)

const (
	defaultUIAddr = "127.0.0.1:8090"
	uiPrefix      = "ui/"
)

// uiCredentialFlags are the flags of the commands that mint a link's
// credentials, which last d unless --duration says otherwise.
func uiCredentialFlags(d time.Duration) []cli.Flag {
	return []cli.Flag{
		&cli.DurationFlag{Name: "duration", Value: d, Usage: "how long the link's credentials last (15m to 12h)"},
		&cli.BoolFlag{Name: "operator", Usage: "credentials that may also cancel, replay and pause (write task objects, their index entries, edge objects and control.json); default: read-only"},
		&cli.StringFlag{Name: "role-arn", EnvVars: []string{"QO_UI_ROLE_ARN"},
			Usage: "AWS: mint the credentials by assuming this `ARN` (default: GetFederationToken for IAM users)"},
	}
}

func uiCommand() *cli.Command {
	return &cli.Command{
		Name:  "ui",
		Usage: "the web dashboard: serve it locally, deploy it to the bucket, or print a link with credentials",
		Description: `The web UI is static files (embedded in qo) that talk to the bucket straight
from the browser, signing S3 requests themselves: there is no server in
between. The page takes its settings from the link's fragment (#...), which
browsers never send to a server, and keeps credentials in memory only.

Credentials: 'qo ui url' and 'qo ui serve' mint short-lived credentials
through STS (MinIO's AssumeRole; on AWS AssumeRole with --role-arn, or
GetFederationToken for IAM users) and put them in the link. They are scoped
to the queue's keys in the bucket and read-only: the page shows the queue
and hides its actions. With --operator they may also write what the page's
actions write (task objects, their ready/waiting/dead/lease entries, and
control.json for pause and resume); no link can write queue.json, monitor/,
shard-leases/, workers/, or anything else in the bucket such as the UI's own
files under ui/.
The dev server (qo dev) has no STS: its links carry its own local keys. Keys
can also be typed into the page by hand.

The bucket needs a CORS rule for the page's origin ('qo ui deploy' sets one;
MinIO allows every origin by default). Setup for AWS, MinIO and versitygw:
docs/webui.md.`,
		Subcommands: []*cli.Command{
			{
				Name:  "serve",
				Usage: "serve the UI on this machine and print a link that opens it on the bucket",
				Description: `Serves the embedded files on a loopback address (the page still talks to S3
itself) and prints a link with a one-time code: the page exchanges it once
(POST /session, from this server's own page only) for short-lived
credentials, which it keeps in memory; the code works once, within 10
minutes, so the browser's history keeps nothing of use.

Examples:
  qo ui serve
  qo ui serve --addr 127.0.0.1:9000 --duration 4h`,
				Flags: append([]cli.Flag{
					&cli.StringFlag{Name: "addr", Value: defaultUIAddr, Usage: "listen `ADDRESS` (loopback only)"},
					&cli.BoolFlag{Name: "no-credentials", Usage: "print a link without credentials (the page asks for keys)"},
				}, append(uiCredentialFlags(time.Hour), logFlags()...)...),
				Action: runUIServe,
			},
			{
				Name:  "url",
				Usage: "print a link to the UI carrying short-lived credentials for the bucket",
				Description: `The link carries the credentials themselves (qo cannot serve a page elsewhere
a one-time code for them): the browser's history keeps the link, so they
last 15 minutes by default, the least STS allows; the page asks for a new
link when they expire. qo ui serve keeps them out of the history.

Examples:
  qo ui url                                   # for 'qo ui serve' on its default address
  qo ui url --deployed                        # for the copy 'qo ui deploy' put in the bucket
  qo ui url --base https://ops.example.com/qo/ --role-arn arn:aws:iam::123456789012:role/qo-ui`,
				Flags: append([]cli.Flag{
					&cli.StringFlag{Name: "base", Value: "http://" + defaultUIAddr + "/", Usage: "where the UI is served (`URL`)"},
					&cli.BoolFlag{Name: "deployed", Usage: "link to the UI deployed in the bucket (qo ui deploy)"},
				}, uiCredentialFlags(15*time.Minute)...),
				Action: runUIURL,
			},
			{
				Name:  "deploy",
				Usage: "upload the UI to the bucket's ui/ prefix, readable by anyone, and set the CORS rule",
				Description: `Uploads the UI's files to ui/ (they hold no data: the page reads the queue
with the credentials of its link), lets anyone read ui/* through a statement
of the bucket policy (Sid QoWebUIPublicRead), and allows --origin to call
the bucket through a CORS rule (ID qo-web-ui). Then 'qo ui url --deployed'
prints a link.

The deployed index.html carries a Content-Security-Policy (a meta element:
a bucket sends no such header): scripts from ui/ only, requests to the S3
endpoint and --connect-src only. The page refuses to run inside a frame.

The bucket's other policy statements and CORS rules are kept as they are;
running deploy again replaces only qo's statement and rule. When the policy
or the CORS rules cannot be read or merged safely, nothing is changed: qo
prints the statement or rule to add by hand (then rerun with
--no-public-read or --no-cors).

On AWS, S3 Block Public Access must allow the bucket policy; otherwise serve
the UI elsewhere (qo ui serve, or any static host) and keep the bucket
private.`,
				Flags: []cli.Flag{
					&cli.StringSliceFlag{Name: "origin", Usage: "origins allowed to call the bucket (CORS), e.g. http://127.0.0.1:8090; default: the bucket's own endpoint and qo ui serve's"},
					&cli.BoolFlag{Name: "no-public-read", Usage: "do not touch the bucket policy (add the statement that makes ui/* readable yourself)"},
					&cli.BoolFlag{Name: "no-cors", Usage: "do not touch the bucket's CORS configuration (add qo's rule yourself)"},
					&cli.StringSliceFlag{Name: "connect-src", Usage: "more origins the deployed page may send requests to (its Content-Security-Policy), e.g. qo serve's https://qo.example.com; the S3 endpoint is always allowed"},
				},
				Action: runUIDeploy,
			},
		},
	}
}

// uiLink returns the UI's settings and credentials, as a link's fragment
// carries them; note says where the credentials came from.
func uiLink(c *cli.Context, withCredentials bool) (frag url.Values, note string, err error) {
	cfg, err := storeConfig(c)
	if err != nil {
		return nil, "", err
	}
	frag = uiFragment(cfg.Endpoint, cfg.Bucket, cfg.Region)
	switch {
	case !withCredentials:
		note = "the link carries no credentials: the page asks for keys"
	case cfg.AccessKey != "" && isDevEndpoint(cfg.Endpoint):
		// The dev gateway has no STS; its keys are local to this machine.
		frag.Set("ak", cfg.AccessKey)
		frag.Set("sk", cfg.SecretKey)
		note = "the dev server has no STS: the link carries its own local keys"
	default:
		s, err := openStore(c)
		if err != nil {
			return nil, "", err
		}
		d := c.Duration("duration")
		if d < 15*time.Minute || d > 12*time.Hour {
			return nil, "", usageError("--duration %s: want 15m to 12h", d)
		}
		ctx, cancel := context.WithTimeout(c.Context, 30*time.Second)
		defer cancel()
		access, what := linkAccess(false), "read-only"
		if c.Bool("operator") {
			access, what = linkAccess(true), "operator"
		}
		creds, err := s.TempCredentials(ctx, s3store.TempCredentialsOptions{Access: access, RoleARN: c.String("role-arn"), Duration: d})
		if err != nil {
			return nil, "", fmt.Errorf("mint short-lived credentials: %w (the S3 server may have no STS: use --no-credentials and type keys into the page, or on AWS pass --role-arn)", err)
		}
		frag.Set("ak", creds.AccessKeyID)
		frag.Set("sk", creds.SecretAccessKey)
		frag.Set("st", creds.SessionToken)
		frag.Set("exp", creds.Expires.UTC().Format(time.RFC3339))
		if !c.Bool("operator") {
			frag.Set("ro", "1")
		}
		note = fmt.Sprintf("%s credentials scoped to bucket %s (the queue's keys only), valid until %s", what, cfg.Bucket, creds.Expires.Local().Format(time.DateTime))
	}
	return frag, note, nil
}

// linkSecrets are the fragment keys qo ui serve hands over through a
// one-time code instead of printing them.
var linkSecrets = []string{"ak", "sk", "st", "exp", "ro"}

// linkReads are the keys the web UI reads: every key of the layout but
// those of the monitor's and the workers' coordination, which it never
// shows (of monitor/ only the throughput rollup, which its charts read).
var linkReads = []string{
	queue.ConfigKey, queue.ControlKey, queue.TasksPrefix, queue.ReadyPrefix, queue.LeasesPrefix, queue.WaitingPrefix,
	queue.DeadPrefix, queue.DataPrefix, queue.WorkersPrefix, queue.SchedulesPrefix, queue.IdempotencyPrefix,
	queue.WorkflowsPrefix, queue.WorkflowNamesPrefix, queue.ThroughputPrefix, queue.EdgesPrefix,
}

// Operator links write what the web UI's operator actions write
// (webui/src/backend.js): setPause writes control.json; apply writes a
// task object and the index entries its new version needs (ready/,
// waiting/, dead/: the page never makes a task running) and deletes those
// only the old one needed (a running task's lease/ entry included); a
// cancel that ends a parent of a wide child writes an edge object there,
// lists them, and deletes them when the child is decided (edges/).
// Nothing else: not queue.json (one bad write stops every client), nor
// monitor/, shard-leases/ or workers/ (the fleet's coordination).
var (
	linkPuts    = []string{queue.ControlKey, queue.TasksPrefix, queue.ReadyPrefix, queue.WaitingPrefix, queue.DeadPrefix, queue.EdgesPrefix}
	linkDeletes = []string{queue.ReadyPrefix, queue.LeasesPrefix, queue.WaitingPrefix, queue.DeadPrefix, queue.EdgesPrefix}
)

// linkAccess is what a link's credentials may do: read what the page
// shows, and with operator also write what its actions write.
func linkAccess(operator bool) s3store.Access {
	a := s3store.Access{Read: linkReads}
	if operator {
		a.Put, a.Delete = linkPuts, linkDeletes
	}
	return a
}

// uiFragment is the web UI's settings for a bucket, as its link's fragment
// carries them (credentials are added as ak, sk, st and exp).
func uiFragment(endpoint, bucket, region string) url.Values {
	if region == "" {
		region = s3store.DefaultRegion
	}
	return url.Values{"endpoint": {endpoint}, "bucket": {bucket}, "region": {region}}
}

// uiURL is base with frag as its fragment.
func uiURL(base string, frag url.Values) string {
	return strings.TrimSuffix(base, "#") + "#" + frag.Encode()
}

// isDevEndpoint reports whether endpoint is a running qo dev server.
func isDevEndpoint(endpoint string) bool {
	st, ok := devenv.Discover()
	return ok && st.Endpoint == endpoint
}

// deployedBase is the URL of the UI deployed in the bucket.
func deployedBase(c *cli.Context) (string, error) {
	cfg, err := storeConfig(c)
	if err != nil {
		return "", err
	}
	if cfg.Endpoint == "" {
		region := cfg.Region
		if region == "" {
			region = s3store.DefaultRegion
		}
		return fmt.Sprintf("https://%s.s3.%s.amazonaws.com/%sindex.html", cfg.Bucket, region, uiPrefix), nil
	}
	return strings.TrimRight(cfg.Endpoint, "/") + "/" + cfg.Bucket + "/" + uiPrefix + "index.html", nil
}

// deployConnect lists the origins the deployed page may send requests
// to: the S3 endpoint its links name (on AWS, the regional endpoint the
// page uses and the bucket's own host) and --connect-src.
func deployConnect(c *cli.Context) ([]string, error) {
	cfg, err := storeConfig(c)
	if err != nil {
		return nil, err
	}
	var out []string
	if cfg.Endpoint == "" {
		region := cfg.Region
		if region == "" {
			region = s3store.DefaultRegion
		}
		out = append(out, "https://s3."+region+".amazonaws.com", "https://"+cfg.Bucket+".s3."+region+".amazonaws.com")
	} else {
		u, err := url.Parse(cfg.Endpoint)
		if err != nil || u.Host == "" {
			return nil, usageError("S3 endpoint %q: want scheme://host[:port]", cfg.Endpoint)
		}
		out = append(out, u.Scheme+"://"+u.Host)
	}
	return append(out, c.StringSlice("connect-src")...), nil
}

func runUIURL(c *cli.Context) error {
	base := c.String("base")
	if c.Bool("deployed") {
		var err error
		if base, err = deployedBase(c); err != nil {
			return err
		}
	}
	frag, note, err := uiLink(c, true)
	if err != nil {
		return err
	}
	fmt.Fprintln(c.App.ErrWriter, "qo: "+note)
	fmt.Fprintln(c.App.Writer, uiURL(base, frag))
	return nil
}

func runUIServe(c *cli.Context) error {
	addr := c.String("addr")
	loopback, err := isLoopback(addr)
	if err != nil {
		return err
	}
	if !loopback {
		return usageError("qo ui serve only listens on loopback (got %s): to share the UI, use qo ui deploy or any static host", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return usageError("cannot listen on %s: %v (pick another with --addr)", addr, err)
	}
	base := "http://" + ln.Addr().String() + "/"
	frag, note, err := uiLink(c, !c.Bool("no-credentials"))
	if err != nil {
		ln.Close()
		return err
	}
	// The credentials are not printed: the link carries a one-time code
	// the page exchanges for them (POST /session), so the browser's
	// history and the terminal keep nothing of use.
	codes := httpapi.NewLoginCodes[url.Values](0, nil)
	secrets := url.Values{}
	for _, k := range linkSecrets {
		if v := frag.Get(k); v != "" {
			secrets.Set(k, v)
			frag.Del(k)
		}
	}
	if len(secrets) > 0 {
		code, exp, err := codes.New(secrets)
		if err != nil {
			ln.Close()
			return err
		}
		frag.Set("code", code)
		note += fmt.Sprintf("; the link works once, until %s", exp.Local().Format(time.TimeOnly))
	}
	log, err := cmdLogger(c)
	if err != nil {
		ln.Close()
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("POST /session", uiSessionHandler(codes))
	connect, err := deployConnect(c)
	if err != nil {
		ln.Close()
		return err
	}
	page, err := webui.Handler(connect...)
	if err != nil {
		ln.Close()
		return usageError("%v", err)
	}
	mux.Handle("/", page)
	srv := newHTTPServer(addr, logRequests(log, mux), log)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	fmt.Fprintf(c.App.ErrWriter, "qo: serving the web UI on %s (%s); open:\n", base, note)
	fmt.Fprintln(c.App.Writer, uiURL(base, frag))
	ctx, cancel := context.WithCancel(c.Context)
	defer cancel()
	stop := onSignals(func(int) { cancel() })
	defer stop()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutCtx, shutCancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer shutCancel()
	return srv.Shutdown(shutCtx)
}

// uiSessionHandler exchanges a link's one-time code for its credentials,
// once. Only this server's own page may ask: a request naming another host
// (a DNS name rebound to 127.0.0.1) or coming from another site's page is
// refused, and the body must be JSON (which no other site can send without
// a preflight).
func uiSessionHandler(codes *httpapi.LoginCodes[url.Values]) http.Handler {
	fail := func(w http.ResponseWriter, status int, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"message": msg}})
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		if ip := net.ParseIP(strings.Trim(host, "[]")); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			fail(w, http.StatusMisdirectedRequest, fmt.Sprintf("Host %q is not this loopback server", r.Host))
			return
		}
		origin := r.Header.Get("Origin")
		if site := r.Header.Get("Sec-Fetch-Site"); (site != "" && site != "same-origin") || (origin != "" && origin != "http://"+r.Host) {
			fail(w, http.StatusForbidden, fmt.Sprintf("refusing a code exchange from another site (Origin %q)", origin))
			return
		}
		if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
			fail(w, http.StatusUnsupportedMediaType, "the body must be JSON (Content-Type: application/json)")
			return
		}
		code, err := httpapi.ReadCode(r)
		if err != nil {
			fail(w, http.StatusBadRequest, err.Error())
			return
		}
		secrets, err := codes.Redeem(code)
		if err != nil {
			fail(w, http.StatusUnauthorized, err.Error()+": get a new link (restart qo ui serve, or qo ui url)")
			return
		}
		out := map[string]string{}
		for k := range secrets {
			out[k] = secrets.Get(k)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(out)
	})
}

// uiDeployPlan is what qo ui deploy will write to the bucket's
// configuration, worked out (and refused) before anything is uploaded.
type uiDeployPlan struct {
	policy    string           // the merged bucket policy; "" to leave it alone
	cors      []types.CORSRule // the merged CORS rules; nil to leave them alone
	noCORS    bool             // the server takes no CORS rules
	origins   []string
	statement json.RawMessage
}

// planUIDeploy reads the bucket's policy and CORS rules and merges qo's
// statement and rule into them. When either cannot be read or merged
// without guessing, it prints what to add by hand to w and fails: nothing
// has been changed yet.
func planUIDeploy(ctx context.Context, w io.Writer, s *s3store.Store, publicRead, setCORS bool, origins []string) (*uiDeployPlan, error) {
	p := &uiDeployPlan{origins: origins, statement: s3store.PublicReadStatement(s.Bucket(), uiPrefix)}
	if publicRead {
		cur, err := s.BucketPolicy(ctx)
		if err == nil {
			p.policy, err = s3store.MergePolicyStatement(cur, p.statement)
		}
		if err != nil {
			fmt.Fprintf(w, "qo: nothing was changed. Add this statement to the \"Statement\" list of the policy of bucket %s yourself,\n"+
				"then run qo ui deploy --no-public-read:\n%s\n", s.Bucket(), indentJSON(p.statement))
			return nil, storageError("cannot add qo's statement (Sid %s) to the bucket policy: %v: add it by hand (printed above) and rerun with --no-public-read",
				s3store.PublicReadSid, err)
		}
	}
	if setCORS {
		rule := s3store.UICORSRule(origins)
		cur, err := s.CORSRules(ctx)
		if errors.Is(err, store.ErrNotSupported) {
			p.noCORS = true
			return p, nil
		}
		if err == nil {
			p.cors, err = s3store.MergeCORSRule(cur, rule)
		}
		if err != nil {
			b, _ := json.MarshalIndent(rule, "", "  ")
			fmt.Fprintf(w, "qo: nothing was changed. Add this rule to the CORS configuration of bucket %s yourself,\n"+
				"then run qo ui deploy --no-cors:\n%s\n", s.Bucket(), b)
			return nil, storageError("cannot add qo's CORS rule (ID %s) to the bucket's CORS configuration: %v: add it by hand (printed above) and rerun with --no-cors",
				s3store.CORSRuleID, err)
		}
	}
	return p, nil
}

// indentJSON is raw, indented for people.
func indentJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return string(raw)
	}
	return b.String()
}

func runUIDeploy(c *cli.Context) error {
	s, err := openStore(c)
	if err != nil {
		return err
	}
	ctx := c.Context
	origins := c.StringSlice("origin")
	if len(origins) == 0 {
		base, err := deployedBase(c)
		if err != nil {
			return err
		}
		u, _ := url.Parse(base)
		origins = []string{u.Scheme + "://" + u.Host, "http://" + defaultUIAddr}
	}
	plan, err := planUIDeploy(ctx, c.App.ErrWriter, s, !c.Bool("no-public-read"), !c.Bool("no-cors"), origins)
	if err != nil {
		return err
	}

	connect, err := deployConnect(c)
	if err != nil {
		return err
	}
	index, err := webui.DeployedIndex(connect)
	if err != nil {
		return usageError("--connect-src: %v", err)
	}
	var n int
	err = fs.WalkDir(webui.Files(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(webui.Files(), p)
		if err != nil {
			return err
		}
		if p == "index.html" {
			body = index // with its Content-Security-Policy
		}
		ctype := mime.TypeByExtension(path.Ext(p))
		if ctype == "" {
			ctype = "application/octet-stream"
		}
		_, err = s.Client().PutObject(ctx, &s3.PutObjectInput{
			Bucket: aws.String(s.Bucket()), Key: aws.String(uiPrefix + p), Body: bytes.NewReader(body),
			ContentType: aws.String(ctype), CacheControl: aws.String("no-cache"),
		})
		if err != nil {
			return fmt.Errorf("upload %s%s: %w", uiPrefix, p, err)
		}
		n++
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(c.App.ErrWriter, "qo: uploaded %d files to %s\n", n, uiPrefix)

	if plan.policy != "" {
		if err := s.PutBucketPolicy(ctx, plan.policy); err != nil {
			return storageError("set the bucket policy that lets browsers read %s*: %v (on AWS, S3 Block Public Access may forbid it: serve the UI with 'qo ui serve' instead, or rerun with --no-public-read and host the files elsewhere)", uiPrefix, err)
		}
		fmt.Fprintf(c.App.ErrWriter, "qo: %s* is readable by anyone (bucket policy statement %s; the other statements are unchanged; the queue stays private)\n",
			uiPrefix, s3store.PublicReadSid)
	}

	switch {
	case c.Bool("no-cors"):
	case !plan.noCORS:
		err := s.PutCORSRules(ctx, plan.cors)
		if errors.Is(err, store.ErrNotSupported) {
			plan.noCORS = true
			break
		}
		if err != nil {
			return storageError("set the bucket's CORS rule for %s: %v", strings.Join(origins, ", "), err)
		}
		fmt.Fprintf(c.App.ErrWriter, "qo: CORS allows %s (rule %s; the other rules are unchanged)\n", strings.Join(origins, ", "), s3store.CORSRuleID)
	}
	if plan.noCORS {
		fmt.Fprintln(c.App.ErrWriter, "qo: this S3 server does not take CORS rules (MinIO allows every origin by default: see MINIO_API_CORS_ALLOW_ORIGIN)")
	}
	base, err := deployedBase(c)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.App.ErrWriter, "qo: deployed; get a link with credentials: qo ui url --deployed\n")
	fmt.Fprintln(c.App.Writer, base)
	return nil
}
