package s3store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/qo-queue/qo/store"
)

// Error is the error of a failed operation. It matches its store sentinel
// (Kind) and the underlying SDK error with errors.Is and errors.As.
type Error struct {
	Op       string // "put", "get", "list", ...
	Key      string // the key, or the prefix of a list; may be empty
	Bucket   string
	Endpoint string
	// Kind is the store sentinel (store.ErrNotFound, ...), or nil for an
	// error callers are not expected to branch on (a 500, a bad request).
	Kind error
	// Fix tells an operator what to do; empty when the caller's own logic
	// is the fix (a lost compare-and-swap, a missing key).
	Fix string
	// Status is the HTTP status code, 0 when there was no response.
	Status int
	// Code is the S3 error code (NoSuchKey, ...), empty without one.
	Code string
	Err  error // the SDK error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Op)
	if e.Key != "" {
		b.WriteString(" ")
		b.WriteString(e.Key)
	}
	fmt.Fprintf(&b, " (bucket %q at %s): ", e.Bucket, e.Endpoint)
	if e.Kind != nil {
		b.WriteString(e.Kind.Error())
		b.WriteString(": ")
	}
	b.WriteString(e.cause())
	if e.Fix != "" {
		b.WriteString("; ")
		b.WriteString(e.Fix)
	}
	return b.String()
}

// cause summarises Err in one line without the SDK's operation preamble.
func (e *Error) cause() string {
	var apiErr smithy.APIError
	if e.Status != 0 && errors.As(e.Err, &apiErr) {
		msg := apiErr.ErrorMessage()
		if msg == "" {
			return fmt.Sprintf("HTTP %d %s", e.Status, apiErr.ErrorCode())
		}
		return fmt.Sprintf("HTTP %d %s: %s", e.Status, apiErr.ErrorCode(), msg)
	}
	if e.Status != 0 {
		return fmt.Sprintf("HTTP %d", e.Status)
	}
	// Transport failures: the innermost network error reads best.
	var opErr *net.OpError
	if errors.As(e.Err, &opErr) {
		return opErr.Error()
	}
	var dnsErr *net.DNSError
	if errors.As(e.Err, &dnsErr) {
		return dnsErr.Error()
	}
	msg := e.Err.Error()
	// Credential failures: drop the SDK's "operation error ..." preamble.
	if i := strings.Index(msg, "get identity: "); i >= 0 {
		msg = msg[i+len("get identity: "):]
	}
	return msg
}

// Unwrap exposes both the sentinel and the SDK error.
func (e *Error) Unwrap() []error {
	if e.Kind == nil {
		return []error{e.Err}
	}
	return []error{e.Kind, e.Err}
}

// Fixes shared by classify and the reachability check.
const (
	endpointFix      = "check S3_ENDPOINT (or --endpoint) and that the server is running"
	noCredentialsFix = "no usable credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE"
)

// noCredentials reports whether err is the SDK's credential chain finding
// no credentials (the request was not sent). The SDK has no error type for
// it, only these texts.
func noCredentials(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "get identity") ||
		strings.Contains(msg, "failed to retrieve credentials") ||
		strings.Contains(msg, "failed to refresh cached credentials")
}

// mapOpts tells classify what the request was.
type mapOpts struct {
	ifMatch     bool // an If-Match condition was sent
	ifNoneMatch bool // a create-only condition was sent
	version     bool // a specific version was asked for
	bucketLevel bool // a 404 without a code means the bucket is missing
}

// wrap turns an SDK error into an *Error. Context cancellation passes
// through wrapped with the operation, so errors.Is(err, context.Canceled)
// holds and it is not mistaken for a storage failure.
func (s *Store) wrap(ctx context.Context, op, key string, err error, o mapOpts) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		if key != "" {
			return fmt.Errorf("%s %s: %w", op, key, err)
		}
		return fmt.Errorf("%s: %w", op, err)
	}
	e := &Error{Op: op, Key: key, Bucket: s.bucket, Endpoint: s.endpoint, Err: err}
	classify(e, o)
	if e.Kind == store.ErrAccessDenied && e.Fix == noCredentialsFix {
		// Without credentials nothing was sent, so nothing says whether
		// the endpoint answers; when it does not, that is the first
		// thing to fix.
		if cause := s.unreachable(ctx); cause != nil {
			e.Kind, e.Fix = store.ErrUnreachable, endpointFix+" (and no credentials were found either: "+noCredentialsFix+")"
			e.Err = cause
		}
	}
	return e
}

// reachabilityTimeout bounds the request of unreachable.
const reachabilityTimeout = 3 * time.Second

// unreachable sends one unsigned request to the configured endpoint with
// the store's HTTP client (its proxy and TLS settings) and returns the
// transport error when no answer came, nil when the server answered
// anything, or when no endpoint was configured (AWS S3).
func (s *Store) unreachable(ctx context.Context) error {
	endpoint := s.rawEndpoint
	if endpoint == "" && s.awsCfg.BaseEndpoint != nil {
		endpoint = *s.awsCfg.BaseEndpoint
	}
	if endpoint == "" || s.awsCfg.HTTPClient == nil || ctx.Err() != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, reachabilityTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, endpoint, nil)
	if err != nil {
		return nil
	}
	resp, err := s.awsCfg.HTTPClient.Do(req)
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			return nil // the caller gave up: no verdict
		}
		return err
	}
	resp.Body.Close()
	return nil
}

// statusOf returns the HTTP status of err's response, 0 without one.
func statusOf(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	var sre *smithyhttp.ResponseError
	if errors.As(err, &sre) {
		return sre.HTTPStatusCode()
	}
	return 0
}

// classify fills Kind, Fix, Status and Code of e from its SDK error.
func classify(e *Error, o mapOpts) {
	if noCredentials(e.Err) {
		// The request was never sent: the SDK's credential chain found
		// nothing. A status inside is a credential source's answer (an
		// instance metadata service's 403), not the S3 server's.
		e.Kind, e.Fix = store.ErrAccessDenied, noCredentialsFix
		return
	}
	e.Status = statusOf(e.Err)
	var apiErr smithy.APIError
	if errors.As(e.Err, &apiErr) && e.Status != 0 {
		e.Code = apiErr.ErrorCode()
	}
	credFix := "check the credentials (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE) and their permissions on the bucket"
	bucketFix := "create it with qo init --create-bucket, or check S3_BUCKET (or --bucket)"

	if e.Status == 0 {
		var sendErr *smithyhttp.RequestSendError
		var netErr net.Error
		if errors.As(e.Err, &sendErr) || errors.As(e.Err, &netErr) {
			e.Kind, e.Fix = store.ErrUnreachable, endpointFix
		}
		return
	}

	switch e.Code {
	case "PreconditionFailed":
		e.Kind = store.ErrPreconditionFailed
		return
	case "NoSuchBucket":
		e.Kind, e.Fix = store.ErrBucketNotFound, bucketFix
		return
	case "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidToken",
		"ExpiredToken", "TokenRefreshRequired", "AllAccessDisabled", "AccountProblem",
		// versitygw answers an unknown access key with 404 XAdminUserNotFound.
		"XAdminUserNotFound":
		e.Kind, e.Fix = store.ErrAccessDenied, credFix
		return
	case "ConditionalRequestConflict":
		// AWS answers 409 when conditional writes to one key race.
		e.Kind = store.ErrPreconditionFailed
		return
	case "NotImplemented":
		e.Kind = store.ErrNotSupported
		return
	case "NoSuchKey", "NoSuchVersion":
		if o.ifMatch {
			// MinIO and versitygw answer If-Match on a missing key with
			// 404 NoSuchKey where AWS answers 412: the caller lost a race.
			e.Kind = store.ErrPreconditionFailed
			return
		}
		e.Kind = store.ErrNotFound
		return
	case "InvalidArgument":
		if o.version {
			e.Kind = store.ErrNotFound // a malformed version id names no version
			return
		}
	case "MethodNotAllowed":
		if o.version {
			e.Kind = store.ErrNotFound // the version is a delete marker
			return
		}
	}

	switch e.Status {
	case 412:
		e.Kind = store.ErrPreconditionFailed
	case 404:
		switch {
		case o.bucketLevel && (e.Code == "" || e.Code == "NotFound"):
			// A 404 without a body (HEAD) or with the SDK's generic code;
			// one with another code is some other missing thing, and
			// saying "create the bucket" would send the user astray.
			e.Kind, e.Fix = store.ErrBucketNotFound, bucketFix
		case o.bucketLevel:
		case o.ifMatch:
			e.Kind = store.ErrPreconditionFailed
		default:
			e.Kind = store.ErrNotFound
		}
	case 409:
		if o.ifMatch || o.ifNoneMatch {
			e.Kind = store.ErrPreconditionFailed
		}
	case 401, 403:
		e.Kind, e.Fix = store.ErrAccessDenied, credFix
	case 501:
		e.Kind = store.ErrNotSupported
	}
}
