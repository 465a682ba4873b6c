// Package connect opens a qo queue in one call, from the settings the qo
// command line reads: the connection flags' environment variables and,
// when none is set, a `qo dev` running on this machine.
//
//	q, err := connect.Open(ctx, queue.Options{})
//
// The settings, in the order they are tried:
//
//	S3_BUCKET                the queue's bucket
//	S3_ENDPOINT              the S3 endpoint URL (empty: AWS S3)
//	S3_REGION, AWS_REGION    the region (the first one set wins)
//	S3_PATH_STYLE            true/false: address the bucket as ENDPOINT/BUCKET
//	                         (default: on when S3_ENDPOINT is set)
//	AWS_PROFILE              the shared AWS config profile
//	QO_ALLOW_NO_VERSIONING   1 or true: accept a bucket without versioning
//
// Credentials come from the standard AWS chain (AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY, the profile, SSO, roles). With neither a bucket
// nor an endpoint set, the state file of a running `qo dev` is read (in
// QO_DEV_DATA_DIR, else the per-user data directory): its endpoint,
// bucket and credentials are used. The qo command resolves its own
// settings with this package, its flags taking the place of the
// environment variables.
//
// The package reads the dev state file without linking the embedded S3
// server: a program that imports it stays a plain S3 client.
package connect

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store/s3store"
)

// The environment variables of the connection settings (the twins of the
// qo command's flags --bucket, --endpoint, --region, --path-style and
// --profile).
const (
	EnvBucket            = "S3_BUCKET"
	EnvEndpoint          = "S3_ENDPOINT"
	EnvRegion            = "S3_REGION"
	EnvAWSRegion         = "AWS_REGION"
	EnvPathStyle         = "S3_PATH_STYLE"
	EnvProfile           = "AWS_PROFILE"
	EnvAllowNoVersioning = "QO_ALLOW_NO_VERSIONING"
	// EnvDevDataDir names the data directory of qo dev (its state file
	// is found there).
	EnvDevDataDir = "QO_DEV_DATA_DIR"
)

// Errors callers branch on.
var (
	// ErrNoBucket: no bucket is configured and no qo dev runs.
	ErrNoBucket = errors.New("no bucket configured")
	// ErrVersioningOff: the bucket keeps no object versions (qo's task
	// history) and AllowNoVersioning is not set.
	ErrVersioningOff = errors.New("bucket versioning is off")
)

// versioningTimeout bounds the first request to the bucket, so a
// black-holed endpoint fails in seconds rather than after the SDK's
// retries.
const versioningTimeout = 20 * time.Second

// Settings are the connection settings. The zero value means "a running
// qo dev".
type Settings struct {
	Bucket   string
	Endpoint string // empty: AWS S3
	Region   string // empty: the AWS chain's, else us-east-1
	Profile  string
	// PathStyle addresses the bucket as ENDPOINT/BUCKET. When
	// PathStyleSet is false it is on whenever Endpoint is set:
	// self-hosted servers rarely resolve BUCKET.host names.
	PathStyle, PathStyleSet bool
	// AllowNoVersioning accepts a bucket without versioning (no task
	// history) in Open.
	AllowNoVersioning bool
}

// FromEnv reads the settings from the environment variables (see the
// package documentation). A malformed boolean is an error naming the
// variable.
func FromEnv() (Settings, error) { return fromEnv(os.LookupEnv) }

func fromEnv(lookup func(string) (string, bool)) (Settings, error) {
	get := func(names ...string) (string, bool) {
		for _, n := range names {
			if v, ok := lookup(n); ok {
				return strings.TrimSpace(v), true
			}
		}
		return "", false
	}
	var s Settings
	s.Bucket, _ = get(EnvBucket)
	s.Endpoint, _ = get(EnvEndpoint)
	s.Region, _ = get(EnvRegion, EnvAWSRegion)
	s.Profile, _ = get(EnvProfile)
	if v, ok := get(EnvPathStyle); ok && v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return s, fmt.Errorf("%s=%q is not a boolean: set it to true or false", EnvPathStyle, v)
		}
		s.PathStyle, s.PathStyleSet = b, true
	}
	s.AllowNoVersioning = AllowNoVersioning(lookup)
	return s, nil
}

// AllowNoVersioning reports whether QO_ALLOW_NO_VERSIONING is 1 or true
// in lookup (os.LookupEnv for the process's environment).
func AllowNoVersioning(lookup func(string) (string, bool)) bool {
	v, _ := lookup(EnvAllowNoVersioning)
	v = strings.TrimSpace(v)
	return v == "1" || strings.EqualFold(v, "true")
}

// StoreConfig resolves s into the S3 configuration of its bucket. With
// neither a bucket nor an endpoint it looks for a running qo dev
// (DiscoverDev); a bucket-less setting that finds none is ErrNoBucket.
// Credentials are left to the AWS chain except a dev environment's.
func (s Settings) StoreConfig(ctx context.Context) (s3store.Config, error) {
	return s.storeConfig(func() (*DevState, bool) { return DiscoverDev(ctx) })
}

func (s Settings) storeConfig(discover func() (*DevState, bool)) (s3store.Config, error) {
	bucket, endpoint := strings.TrimSpace(s.Bucket), strings.TrimSpace(s.Endpoint)
	if bucket == "" {
		if endpoint == "" {
			if st, ok := discover(); ok {
				return st.StoreConfig(), nil
			}
		}
		return s3store.Config{}, ErrNoBucket
	}
	pathStyle := s.PathStyle
	if !s.PathStyleSet && endpoint != "" {
		pathStyle = true
	}
	return s3store.Config{
		Endpoint:  endpoint,
		Region:    strings.TrimSpace(s.Region),
		Bucket:    bucket,
		Profile:   strings.TrimSpace(s.Profile),
		PathStyle: pathStyle,
	}, nil
}

// Open connects to the queue the environment names (FromEnv), or to a
// running qo dev: the one call a Go program needs.
func Open(ctx context.Context, opts queue.Options) (*queue.Queue, error) {
	s, err := FromEnv()
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	return s.Open(ctx, opts)
}

// Open connects to the bucket s names, checks that it keeps versions
// (unless AllowNoVersioning) and opens the queue in it: 2 requests, the
// versioning check and queue.Open's read of queue.json.
func (s Settings) Open(ctx context.Context, opts queue.Options) (*queue.Queue, error) {
	cfg, err := s.StoreConfig(ctx)
	if errors.Is(err, ErrNoBucket) {
		return nil, fmt.Errorf("connect: %w: set %s (and %s for a server other than AWS S3), or start a local one with 'qo dev'", err, EnvBucket, EnvEndpoint)
	}
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	st, err := s3store.New(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to bucket %q: %w", cfg.Bucket, err)
	}
	vctx, cancel := context.WithTimeout(ctx, versioningTimeout)
	defer cancel()
	on, err := st.Versioning(vctx)
	if err != nil {
		return nil, fmt.Errorf("connect to bucket %q: %w", cfg.Bucket, err)
	}
	if !on && !s.AllowNoVersioning {
		return nil, fmt.Errorf("connect to bucket %q: %w: qo keeps task history in object versions: enable versioning on the bucket, or set %s=1 (Settings.AllowNoVersioning) to run without history",
			cfg.Bucket, ErrVersioningOff, EnvAllowNoVersioning)
	}
	q, err := queue.Open(ctx, st, opts)
	if errors.Is(err, queue.ErrNotInitialized) {
		return nil, fmt.Errorf("connect: bucket %q holds no qo queue (no queue.json): run 'qo init' first: %w", cfg.Bucket, err)
	}
	if err != nil {
		return nil, fmt.Errorf("connect: bucket %q: %w", cfg.Bucket, err)
	}
	return q, nil
}
