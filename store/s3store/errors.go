package s3store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

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
func (s *Store) wrap(op, key string, err error, o mapOpts) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		if key != "" {
			return fmt.Errorf("%s %s: %w", op, key, err)
		}
		return fmt.Errorf("%s: %w", op, err)
	}
	e := &Error{Op: op, Key: key, Bucket: s.bucket, Endpoint: s.endpoint, Err: err}
	classify(e, o)
	return e
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
	e.Status = statusOf(e.Err)
	var apiErr smithy.APIError
	if errors.As(e.Err, &apiErr) && e.Status != 0 {
		e.Code = apiErr.ErrorCode()
	}
	endpointFix := "check S3_ENDPOINT (or --endpoint) and that the server is running"
	credFix := "check the credentials (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE) and their permissions on the bucket"

	if e.Status == 0 {
		var sendErr *smithyhttp.RequestSendError
		var netErr net.Error
		switch {
		case errors.As(e.Err, &sendErr), errors.As(e.Err, &netErr):
			e.Kind, e.Fix = store.ErrUnreachable, endpointFix
		case strings.Contains(e.Err.Error(), "get identity"),
			strings.Contains(e.Err.Error(), "failed to retrieve credentials"),
			strings.Contains(e.Err.Error(), "failed to refresh cached credentials"):
			e.Kind = store.ErrAccessDenied
			e.Fix = "no usable credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE"
		}
		return
	}

	switch e.Code {
	case "PreconditionFailed":
		e.Kind = store.ErrPreconditionFailed
		return
	case "NoSuchBucket":
		e.Kind = store.ErrBucketNotFound
		e.Fix = "create it with qo init --create-bucket, or check S3_BUCKET (or --bucket)"
		return
	case "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidToken",
		"ExpiredToken", "TokenRefreshRequired", "AllAccessDisabled", "AccountProblem":
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
		case o.bucketLevel:
			e.Kind = store.ErrBucketNotFound
			e.Fix = "create it with qo init --create-bucket, or check S3_BUCKET (or --bucket)"
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
