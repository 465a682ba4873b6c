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
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/devenv"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/s3store"
	"github.com/qo-queue/qo/webui"
)

const (
	defaultUIAddr = "127.0.0.1:8090"
	uiPrefix      = "ui/"
)

func uiCredentialFlags() []cli.Flag {
	return []cli.Flag{
		&cli.DurationFlag{Name: "duration", Value: time.Hour, Usage: "how long the link's credentials last (15m to 12h)"},
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
to the queue's keys in the bucket: they cannot write anything else there,
such as the UI's own files under ui/.
The dev server (qo dev) has no STS: its links carry its own local keys. Keys
can also be typed into the page by hand.

The bucket needs a CORS rule for the page's origin ('qo ui deploy' sets one;
MinIO allows every origin by default). Setup for AWS, MinIO and versitygw:
docs/webui.md.`,
		Subcommands: []*cli.Command{
			{
				Name:  "serve",
				Usage: "serve the UI on this machine and print a link that opens it on the bucket",
				Description: `Serves the embedded files on a loopback address (static files only: the page
still talks to S3 itself) and prints a link with short-lived credentials.

Examples:
  qo ui serve
  qo ui serve --addr 127.0.0.1:9000 --duration 4h`,
				Flags: append([]cli.Flag{
					&cli.StringFlag{Name: "addr", Value: defaultUIAddr, Usage: "listen `ADDRESS` (loopback only)"},
					&cli.BoolFlag{Name: "no-credentials", Usage: "print a link without credentials (the page asks for keys)"},
				}, append(uiCredentialFlags(), logFlags()...)...),
				Action: runUIServe,
			},
			{
				Name:  "url",
				Usage: "print a link to the UI carrying short-lived credentials for the bucket",
				Description: `Examples:
  qo ui url                                   # for 'qo ui serve' on its default address
  qo ui url --deployed                        # for the copy 'qo ui deploy' put in the bucket
  qo ui url --base https://ops.example.com/qo/ --role-arn arn:aws:iam::123456789012:role/qo-ui`,
				Flags: append([]cli.Flag{
					&cli.StringFlag{Name: "base", Value: "http://" + defaultUIAddr + "/", Usage: "where the UI is served (`URL`)"},
					&cli.BoolFlag{Name: "deployed", Usage: "link to the UI deployed in the bucket (qo ui deploy)"},
				}, uiCredentialFlags()...),
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

// uiLink returns base with the UI's settings and credentials in its
// fragment; note says where the credentials came from.
func uiLink(c *cli.Context, base string, withCredentials bool) (link, note string, err error) {
	cfg, err := storeConfig(c)
	if err != nil {
		return "", "", err
	}
	frag := uiFragment(cfg.Endpoint, cfg.Bucket, cfg.Region)
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
			return "", "", err
		}
		d := c.Duration("duration")
		if d < 15*time.Minute || d > 12*time.Hour {
			return "", "", usageError("--duration %s: want 15m to 12h", d)
		}
		ctx, cancel := context.WithTimeout(c.Context, 30*time.Second)
		defer cancel()
		creds, err := s.TempCredentials(ctx, s3store.TempCredentialsOptions{Keys: queue.Keys(), RoleARN: c.String("role-arn"), Duration: d})
		if err != nil {
			return "", "", fmt.Errorf("mint short-lived credentials: %w (the S3 server may have no STS: use --no-credentials and type keys into the page, or on AWS pass --role-arn)", err)
		}
		frag.Set("ak", creds.AccessKeyID)
		frag.Set("sk", creds.SecretAccessKey)
		frag.Set("st", creds.SessionToken)
		frag.Set("exp", creds.Expires.UTC().Format(time.RFC3339))
		note = fmt.Sprintf("credentials scoped to bucket %s (the queue's keys only), valid until %s", cfg.Bucket, creds.Expires.Local().Format(time.DateTime))
	}
	return uiURL(base, frag), note, nil
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
	link, note, err := uiLink(c, base, true)
	if err != nil {
		return err
	}
	fmt.Fprintln(c.App.ErrWriter, "qo: "+note)
	fmt.Fprintln(c.App.Writer, link)
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
	link, note, err := uiLink(c, base, !c.Bool("no-credentials"))
	if err != nil {
		ln.Close()
		return err
	}
	log, err := cmdLogger(c)
	if err != nil {
		ln.Close()
		return err
	}
	srv := newHTTPServer(addr, logRequests(log, webui.Handler()), log)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	fmt.Fprintf(c.App.ErrWriter, "qo: serving the web UI on %s (%s); open:\n", base, note)
	fmt.Fprintln(c.App.Writer, link)
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
