// Package s3store implements store.Store on any S3-compatible server (AWS
// S3, MinIO, the embedded versitygw gateway) with aws-sdk-go-v2.
//
// Every HTTP request, SDK retries included, is counted by store.Op and
// outcome (see Requests), and the Date header of every response feeds the
// estimate of the server clock (see Now and ClockOffset).
//
// Errors are wrapped in *Error, which names the operation, the key, the
// bucket and endpoint and, for configuration problems, the fix; callers
// branch on the store sentinels with errors.Is. When the credential chain
// finds no credentials, the error says so (store.ErrAccessDenied with no
// Status, whatever a metadata service answered on the way), or, when the
// endpoint does not answer either, store.ErrUnreachable. The SDK's own log
// lines go to Config.Logger at debug level, never to stderr.
//
// Server differences this package absorbs:
//   - If-Match on a missing key: MinIO and versitygw answer 404 NoSuchKey,
//     others 412. Both become store.ErrPreconditionFailed.
//   - An unknown access key: versitygw answers 404 XAdminUserNotFound,
//     others 403. Both become store.ErrAccessDenied, never
//     store.ErrBucketNotFound.
//   - A 501 to a bucket configuration request becomes store.ErrNotSupported
//     (MinIO answers 501 to PutBucketCors).
//   - A body paired with another version's ETag (a torn read): Get and
//     GetVersion check the body against its ETag where the server's ETags
//     are MD5s and fail with store.ErrTornRead if re-reads do not settle
//     (see etag.go).
//
// Differences it cannot absorb, which callers must tolerate:
//   - MinIO ignores If-Match on DELETE (deletes anyway).
//   - versitygw answers 412 to a create-only PUT over a delete marker.
//   - The SDK retries a request whose response was lost. A conditional PUT
//     that succeeded on the server but whose response was lost is retried
//     and then fails with store.ErrPreconditionFailed against its own
//     write; callers that must know re-read the object and compare.
package s3store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go/logging"

	"github.com/qo-queue/qo/store"
)

// Compile-time conformance.
var (
	_ store.Store   = (*Store)(nil)
	_ store.Counted = (*Store)(nil)
	_ store.Admin   = (*Store)(nil)
)

// DefaultRegion is used when Config.Region is empty.
const DefaultRegion = "us-east-1"

// DefaultMaxAttempts bounds the attempts of one operation (first try plus
// retries) when Config.MaxAttempts is zero.
const DefaultMaxAttempts = 3

// maxBackoff caps the wait between two attempts: a queue prefers failing
// fast (and retrying at its own level) over stalling a worker.
const maxBackoff = 2 * time.Second

// MaxIdleConns is how many idle connections to the server are kept for
// reuse. The SDK's default keeps 10, so a worker with more requests in
// flight (32 slots, its claims, its monitor) closed connections as it
// finished with them and opened new ones (a TLS handshake each against
// AWS) for the next burst.
const MaxIdleConns = 256

// Config selects a bucket and how to reach it.
type Config struct {
	// Endpoint is the server URL, e.g. http://127.0.0.1:9000. Empty means
	// AWS S3 (or AWS_ENDPOINT_URL / AWS_ENDPOINT_URL_S3 when set).
	Endpoint string
	// Region; when empty, AWS_REGION or the profile's region, else
	// DefaultRegion.
	Region string
	// Bucket is required.
	Bucket string
	// AccessKey and SecretKey (and SessionToken) are static credentials.
	// When AccessKey is empty the standard AWS chain is used: environment,
	// shared config and credentials files (Profile), SSO, web identity,
	// container and instance roles.
	AccessKey, SecretKey, SessionToken string
	// Profile selects a profile of the shared AWS config files.
	Profile string
	// PathStyle addresses the bucket as endpoint/bucket instead of
	// bucket.endpoint; MinIO and most self-hosted servers need it.
	PathStyle bool
	// HTTPClient replaces the SDK's HTTP client (tests inject faults here).
	HTTPClient *http.Client
	// MaxAttempts bounds the attempts of one operation, retries included
	// (default DefaultMaxAttempts; 1 disables retries).
	MaxAttempts int
	// Observe, when set, is called after every HTTP request (each retry
	// too) with its kind, its latency and its outcome: nil for a 2xx/3xx
	// answer, otherwise an error naming the status or the transport failure.
	// It must be safe for concurrent use and must not block.
	Observe func(op store.Op, d time.Duration, err error)
	// Logger receives the AWS SDK's own log lines (its warnings about
	// response checksums, instance metadata fallbacks, ...) at debug
	// level; nil means slog.Default(). The SDK never writes to stderr
	// itself: what matters reaches the caller as an error.
	Logger *slog.Logger
}

// Store is a store.Store on one S3 bucket. It is safe for concurrent use.
type Store struct {
	client   *s3.Client
	bucket   string
	endpoint string // for messages: the configured endpoint or "AWS S3"
	counters store.Counters
	clock    serverClock
	etags    etagState // see etag.go
	observe  func(op store.Op, d time.Duration, err error)

	awsCfg      aws.Config // for other AWS APIs (STS) with the same credentials
	rawEndpoint string     // the configured endpoint, "" for AWS
}

// New returns a Store for cfg. It sends no request: a wrong endpoint,
// credentials or bucket show up as errors of the first operation (use Ping
// to check them early).
func New(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("s3 store: no bucket configured: set S3_BUCKET (or --bucket)")
	}
	if cfg.Endpoint != "" {
		u, err := url.Parse(cfg.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("s3 store: endpoint %q is not a URL like http://127.0.0.1:9000: check S3_ENDPOINT (or --endpoint)", cfg.Endpoint)
		}
	}
	if cfg.AccessKey != "" && cfg.SecretKey == "" {
		return nil, errors.New("s3 store: an access key is set but no secret key: set AWS_SECRET_ACCESS_KEY too")
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}

	s := &Store{bucket: cfg.Bucket, endpoint: cfg.Endpoint, observe: cfg.Observe}
	s.clock.now = time.Now
	s.etags.sleep = sleepCtx
	if s.endpoint == "" {
		s.endpoint = "AWS S3"
	}

	opts := []func(*config.LoadOptions) error{
		config.WithLogger(sdkLogger(cfg.Logger)),
		config.WithClientLogMode(0),
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = cfg.MaxAttempts
				o.MaxBackoff = maxBackoff
				// No client-side retry quota: every operation gets its
				// bounded attempts, so an outage does not turn into
				// "quota exceeded" errors long after the server is back.
				o.RateLimiter = ratelimit.None
			})
		}),
	}
	if cfg.Region != "" {
		opts = append(opts, config.WithRegion(cfg.Region))
	}
	if cfg.Profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(cfg.Profile))
	}
	if cfg.AccessKey != "" {
		opts = append(opts, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(cfg.AccessKey, cfg.SecretKey, cfg.SessionToken)))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, config.WithHTTPClient(cfg.HTTPClient))
	} else {
		// The SDK's own client (it honours AWS_CA_BUNDLE), with a larger
		// idle pool.
		opts = append(opts, config.WithHTTPClient(awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
			tr.MaxIdleConns = MaxIdleConns
			tr.MaxIdleConnsPerHost = MaxIdleConns
		})))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("s3 store: load AWS configuration: %w (check AWS_PROFILE and the files under ~/.aws)", err)
	}
	if awsCfg.Region == "" {
		awsCfg.Region = DefaultRegion // neither configured nor in the environment or profile
	}
	if cfg.Endpoint == "" && awsCfg.BaseEndpoint != nil {
		s.endpoint = *awsCfg.BaseEndpoint // from AWS_ENDPOINT_URL(_S3) or the profile
	}
	s.awsCfg, s.rawEndpoint = awsCfg, cfg.Endpoint
	s.client = s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.UsePathStyle = cfg.PathStyle
		// Checksums only where the API requires them: third-party servers
		// vary in their support of the newer flexible checksums.
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		o.APIOptions = append(o.APIOptions, s.addMiddleware)
	})
	return s, nil
}

// sdkLogger routes the SDK's log lines to l (slog.Default() when nil) at
// debug level, with the SDK's classification as an attribute.
func sdkLogger(l *slog.Logger) logging.Logger {
	return logging.LoggerFunc(func(c logging.Classification, format string, v ...any) {
		log := l
		if log == nil {
			log = slog.Default()
		}
		log.Debug("aws sdk: "+fmt.Sprintf(format, v...), "sdk_level", string(c))
	})
}

// Bucket returns the bucket name.
func (s *Store) Bucket() string { return s.bucket }

// Endpoint returns the configured endpoint ("AWS S3" when none was set).
func (s *Store) Endpoint() string { return s.endpoint }

// Client returns the underlying SDK client, for checks the Store does not
// cover. Requests made with it are counted too.
func (s *Store) Client() *s3.Client { return s.client }

// Requests implements store.Counted.
func (s *Store) Requests() *store.Counters { return &s.counters }

// String describes the store for logs.
func (s *Store) String() string { return fmt.Sprintf("s3://%s at %s", s.bucket, s.endpoint) }

// ContentType returns the Content-Type a Put sets for key, by extension.
func ContentType(key string) string {
	switch ext := strings.ToLower(path.Ext(key)); ext {
	case ".json":
		return "application/json"
	case "":
	default:
		if t := mime.TypeByExtension(ext); t != "" {
			return t
		}
	}
	return "application/octet-stream"
}

func checkKey(op, key string) error {
	if key == "" {
		return fmt.Errorf("%s: empty key: every object needs a non-empty key", op)
	}
	return nil
}

// Get implements store.Store, within the bound of store.WithMaxBytes:
// an object whose Content-Length is over it is refused before its body is
// read, and no more than the bound plus one byte is ever read.
func (s *Store) Get(ctx context.Context, key string) (*store.Object, error) {
	if err := checkKey("get", key); err != nil {
		return nil, err
	}
	return s.checked(ctx, "get", key, nil)
}

// GetVersion implements store.Store. The version of a delete marker, and
// a malformed version id, answer store.ErrNotFound.
func (s *Store) GetVersion(ctx context.Context, key, versionID string) (*store.Object, error) {
	if err := checkKey("get version", key); err != nil {
		return nil, err
	}
	if versionID == "" {
		return nil, fmt.Errorf("get version of %s: empty version id: %w", key, store.ErrNotFound)
	}
	return s.checked(ctx, "get version "+versionID+" of", key, aws.String(versionID))
}

// getOnce is one GetObject request, without the torn-read check.
func (s *Store) getOnce(ctx context.Context, op, key string, versionID *string) (*store.Object, error) {
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{
		Bucket:    aws.String(s.bucket),
		Key:       aws.String(key),
		VersionId: versionID,
	})
	if err != nil {
		return nil, s.wrap(ctx, op, key, err, mapOpts{version: versionID != nil})
	}
	defer out.Body.Close()
	var body []byte
	max := store.MaxBytes(ctx)
	n := aws.ToInt64(out.ContentLength)
	switch {
	case max > 0 && n > max:
		// Refused by the announced size, before reading.
		return nil, fmt.Errorf("%s %s: %w", op, key, &store.TooLargeError{Key: key, Size: n, Max: max})
	case max > 0 && n > 0:
		// Within the bound: read into a buffer of that size (net/http
		// holds the body to its Content-Length), not one that doubles.
		body = make([]byte, n)
		_, err = io.ReadFull(out.Body, body)
	case max > 0:
		// Size not announced: read at most one byte past the bound.
		body, err = io.ReadAll(io.LimitReader(out.Body, max+1))
	default:
		body, err = io.ReadAll(out.Body)
	}
	if err != nil {
		return nil, s.wrap(ctx, op, key, fmt.Errorf("read body: %w", err), mapOpts{})
	}
	if max > 0 && int64(len(body)) > max {
		return nil, fmt.Errorf("%s %s: %w", op, key, &store.TooLargeError{Key: key, Max: max})
	}
	return &store.Object{
		Key:          key,
		Body:         body,
		ETag:         aws.ToString(out.ETag),
		VersionID:    versionIDOf(out.VersionId),
		LastModified: aws.ToTime(out.LastModified),
	}, nil
}

// versionIDOf maps the "null" version of unversioned buckets to "".
func versionIDOf(v *string) string {
	if id := aws.ToString(v); id != "null" {
		return id
	}
	return ""
}

// Put implements store.Store. The Content-Type follows the key's extension.
func (s *Store) Put(ctx context.Context, key string, body []byte, cond store.Condition) (store.PutResult, error) {
	return s.PutTagged(ctx, key, body, cond, nil)
}

// PutTagged implements store.Tagger: Put with the tags in the same request
// (the x-amz-tagging header).
func (s *Store) PutTagged(ctx context.Context, key string, body []byte, cond store.Condition, tags []store.Tag) (store.PutResult, error) {
	if err := checkKey("put", key); err != nil {
		return store.PutResult{}, err
	}
	in := &s3.PutObjectInput{
		Bucket:        aws.String(s.bucket),
		Key:           aws.String(key),
		Body:          bytes.NewReader(body),
		ContentLength: aws.Int64(int64(len(body))),
		ContentType:   aws.String(ContentType(key)),
	}
	if cond.IfMatch != "" {
		in.IfMatch = aws.String(cond.IfMatch)
	}
	if cond.IfNoneMatch {
		in.IfNoneMatch = aws.String("*")
	}
	if len(tags) > 0 {
		v := url.Values{}
		for _, t := range tags {
			v.Set(t.Key, t.Value)
		}
		in.Tagging = aws.String(v.Encode())
	}
	out, err := s.client.PutObject(ctx, in)
	if err != nil {
		return store.PutResult{}, s.wrap(ctx, "put", key, err, mapOpts{ifMatch: cond.IfMatch != "", ifNoneMatch: cond.IfNoneMatch})
	}
	s.learnFromPut(aws.ToString(out.ETag), body)
	return store.PutResult{ETag: aws.ToString(out.ETag), VersionID: versionIDOf(out.VersionId)}, nil
}

// Tags implements store.Tagger: the tags of the current version of key.
func (s *Store) Tags(ctx context.Context, key string) ([]store.Tag, error) {
	if err := checkKey("get tags", key); err != nil {
		return nil, err
	}
	out, err := s.client.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil {
		return nil, s.wrap(ctx, "get tags", key, err, mapOpts{})
	}
	tags := make([]store.Tag, 0, len(out.TagSet))
	for _, t := range out.TagSet {
		tags = append(tags, store.Tag{Key: aws.ToString(t.Key), Value: aws.ToString(t.Value)})
	}
	return tags, nil
}

// Delete implements store.Store. If-Match is sent, but some servers ignore
// it (MinIO deletes anyway); a create-only condition is refused.
func (s *Store) Delete(ctx context.Context, key string, cond store.Condition) error {
	if err := checkKey("delete", key); err != nil {
		return err
	}
	if cond.IfNoneMatch {
		return fmt.Errorf("delete %s: a create-only condition cannot guard a delete; use If-Match or no condition: %w", key, store.ErrNotSupported)
	}
	in := &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)}
	if cond.IfMatch != "" {
		in.IfMatch = aws.String(cond.IfMatch)
	}
	if _, err := s.client.DeleteObject(ctx, in); err != nil {
		err = s.wrap(ctx, "delete", key, err, mapOpts{ifMatch: cond.IfMatch != ""})
		if cond.IfMatch == "" && errors.Is(err, store.ErrNotFound) {
			return nil // deleting a missing key is not an error
		}
		return err
	}
	return nil
}

// Now implements store.Store: local time plus the server clock offset
// estimated from the responses seen so far, never going back by the
// estimate's own movement (see serverClock.read). Only when no response has been
// seen yet does it send one request (HeadBucket) to learn the offset.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	if t, ok := s.clock.read(); ok {
		return t, nil
	}
	err := s.Ping(ctx)
	if t, ok := s.clock.read(); ok {
		// Any answer carries a Date, even an error (e.g. access denied).
		return t, nil
	}
	if err == nil {
		err = errors.New("the server's responses carry no Date header")
	}
	return time.Time{}, fmt.Errorf("read the server clock: %w", err)
}

// ClockOffset reports the estimated server clock minus the local clock and
// the half-width of its uncertainty interval; ok is false until a response
// has been seen.
func (s *Store) ClockOffset() (offset, uncertainty time.Duration, ok bool) {
	return s.clock.estimate()
}

// Ping checks that the endpoint answers, the credentials are accepted and
// the bucket exists (one HeadBucket request).
func (s *Store) Ping(ctx context.Context) error {
	_, err := s.client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(s.bucket)})
	if err != nil {
		return s.wrap(ctx, "check bucket", "", err, mapOpts{bucketLevel: true})
	}
	return nil
}

// versioningEnabled is shared by Versioning and tests.
func versioningEnabled(out *s3.GetBucketVersioningOutput) bool {
	return out.Status == types.BucketVersioningStatusEnabled
}
