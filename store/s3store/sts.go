package s3store

import (
	"context"
	"encoding/json"
	"fmt"
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
	// RoleARN is assumed when set (AWS: a role the caller may assume;
	// MinIO ignores it). Without it: AssumeRole on a custom endpoint
	// (MinIO's STS), GetFederationToken on AWS (IAM users).
	RoleARN string
	// Duration is how long they last (at least 15 minutes).
	Duration time.Duration
	// SessionName names the session in audit logs.
	SessionName string
}

// BucketPolicy is an IAM policy allowing what qo's web UI does in one
// bucket: read and write objects and their versions, list the bucket.
func BucketPolicy(bucket string) string {
	doc := map[string]any{
		"Version": "2012-10-17",
		"Statement": []map[string]any{
			{"Effect": "Allow", "Action": []string{"s3:GetObject", "s3:GetObjectVersion", "s3:PutObject", "s3:DeleteObject"},
				"Resource": []string{"arn:aws:s3:::" + bucket + "/*"}},
			{"Effect": "Allow", "Action": []string{"s3:ListBucket", "s3:ListBucketVersions"},
				"Resource": []string{"arn:aws:s3:::" + bucket}},
		},
	}
	b, _ := json.Marshal(doc)
	return string(b)
}

// TempCredentials mints short-lived credentials scoped to the store's
// bucket (BucketPolicy) from the store's own credentials, through the STS
// API of the endpoint (MinIO) or of AWS.
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
	policy := aws.String(BucketPolicy(s.bucket))
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
