package s3store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/aws-sdk-go-v2/service/sts/types"
)

// TempCredentials are short-lived credentials minted through STS.
type TempCredentials struct {
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string
	Expires         time.Time
}

// TempCredentialsOptions shape the credentials TempCredentials mints.
type TempCredentialsOptions struct {
	// Keys are the keys and key prefixes (ending in "/") of the bucket the
	// credentials may read, write and delete (qo's web UI: queue.Keys()).
	// Required: credentials for the whole bucket could replace anything in
	// it, the web UI's own files included.
	Keys []string
	// RoleARN is assumed when set (AWS: a role the caller may assume;
	// MinIO ignores it). Without it: AssumeRole on a custom endpoint
	// (MinIO's STS), GetFederationToken on AWS (IAM users).
	RoleARN string
	// Duration is how long they last (at least 15 minutes).
	Duration time.Duration
	// SessionName names the session in audit logs.
	SessionName string
}

// SessionPolicy is the IAM policy of credentials for qo's web UI in one
// bucket: get, put and delete objects (and read their versions) under keys
// only, each an exact key or a prefix ending in "/"; list the bucket and
// its versions. Everything else in the bucket (the web UI's own files
// under ui/, say) stays out of reach.
func SessionPolicy(bucket string, keys []string) (string, error) {
	if len(keys) == 0 {
		return "", errors.New("session policy: no keys given: the credentials would reach nothing (or, unscoped, everything)")
	}
	objects := make([]string, 0, len(keys))
	for _, k := range keys {
		if k == "" || k == "/" || strings.ContainsAny(k, "*?") {
			return "", fmt.Errorf("session policy: key %q: want a key or a prefix ending in /, without wildcards", k)
		}
		arn := "arn:aws:s3:::" + bucket + "/" + k
		if strings.HasSuffix(k, "/") {
			arn += "*"
		}
		objects = append(objects, arn)
	}
	doc := map[string]any{
		"Version": "2012-10-17",
		"Statement": []map[string]any{
			{"Effect": "Allow", "Action": []string{"s3:GetObject", "s3:GetObjectVersion", "s3:PutObject", "s3:DeleteObject"},
				"Resource": objects},
			{"Effect": "Allow", "Action": []string{"s3:ListBucket", "s3:ListBucketVersions"},
				"Resource": []string{"arn:aws:s3:::" + bucket}},
		},
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return "", fmt.Errorf("session policy: %w", err)
	}
	return string(b), nil
}

// TempCredentials mints short-lived credentials scoped to opts.Keys of the
// store's bucket (SessionPolicy) from the store's own credentials, through
// the STS API of the endpoint (MinIO) or of AWS.
func (s *Store) TempCredentials(ctx context.Context, opts TempCredentialsOptions) (TempCredentials, error) {
	if opts.Duration < 15*time.Minute {
		opts.Duration = 15 * time.Minute
	}
	if opts.SessionName == "" {
		opts.SessionName = "qo-ui"
	}
	client := sts.NewFromConfig(s.awsCfg, func(o *sts.Options) {
		if s.rawEndpoint != "" {
			o.BaseEndpoint = aws.String(s.rawEndpoint)
		}
	})
	secs := aws.Int32(int32(opts.Duration / time.Second))
	doc, err := SessionPolicy(s.bucket, opts.Keys)
	if err != nil {
		return TempCredentials{}, fmt.Errorf("mint credentials: %w", err)
	}
	policy := aws.String(doc)
	var cr *types.Credentials
	switch {
	case opts.RoleARN != "" || s.rawEndpoint != "":
		arn := opts.RoleARN
		if arn == "" {
			arn = "arn:aws:iam::000000000000:role/qo-ui" // MinIO requires the field, not a real role
		}
		out, err := client.AssumeRole(ctx, &sts.AssumeRoleInput{RoleArn: aws.String(arn), RoleSessionName: aws.String(opts.SessionName),
			DurationSeconds: secs, Policy: policy})
		if err != nil {
			return TempCredentials{}, fmt.Errorf("sts assume-role: %w", err)
		}
		cr = out.Credentials
	default:
		out, err := client.GetFederationToken(ctx, &sts.GetFederationTokenInput{Name: aws.String(opts.SessionName), DurationSeconds: secs, Policy: policy})
		if err != nil {
			return TempCredentials{}, fmt.Errorf("sts get-federation-token: %w (with a role, pass --role-arn)", err)
		}
		cr = out.Credentials
	}
	if cr == nil {
		return TempCredentials{}, fmt.Errorf("sts: the answer holds no credentials")
	}
	return TempCredentials{AccessKeyID: aws.ToString(cr.AccessKeyId), SecretAccessKey: aws.ToString(cr.SecretAccessKey),
		SessionToken: aws.ToString(cr.SessionToken), Expires: aws.ToTime(cr.Expiration)}, nil
}
