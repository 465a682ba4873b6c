package s3store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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
	// Access is what the credentials may do in the bucket (SessionPolicy).
	// Required: credentials for the whole bucket could replace anything in
	// it, the web UI's own files included.
	Access Access
	// RoleARN is assumed when set (AWS: a role the caller may assume;
	// MinIO ignores it). Without it: AssumeRole on a custom endpoint
	// (MinIO's STS), GetFederationToken on AWS (IAM users).
	RoleARN string
	// Duration is how long they last (at least 15 minutes).
	Duration time.Duration
	// SessionName names the session in audit logs.
	SessionName string
}

// Access lists what credentials may do to the objects of one bucket. Each
// entry is an exact key or a prefix ending in "/" (every key under it).
type Access struct {
	// Read may be got, with their versions; listing the bucket (and its
	// versions) comes with any access.
	Read []string
	// Put may be written.
	Put []string
	// Delete may be deleted.
	Delete []string
}

// SessionPolicy is the IAM policy of credentials for qo's web UI in one
// bucket: what access allows, and nothing else. Everything else in the
// bucket (the web UI's own files under ui/, say) stays out of reach.
func SessionPolicy(bucket string, access Access) (string, error) {
	if len(access.Read)+len(access.Put)+len(access.Delete) == 0 {
		return "", errors.New("session policy: no keys given: the credentials would reach nothing (or, unscoped, everything)")
	}
	// One statement per set of actions, each key in one statement only:
	// AWS refuses session policies over 2048 characters.
	type group struct {
		actions   []string
		resources []string
	}
	var groups []*group
	seen := map[string]bool{}
	for _, k := range slices.Concat(access.Read, access.Put, access.Delete) {
		if seen[k] {
			continue
		}
		seen[k] = true
		if k == "" || k == "/" || strings.ContainsAny(k, "*?") {
			return "", fmt.Errorf("session policy: key %q: want a key or a prefix ending in /, without wildcards", k)
		}
		var actions []string
		if slices.Contains(access.Read, k) {
			actions = append(actions, "s3:GetObject", "s3:GetObjectVersion")
		}
		if slices.Contains(access.Put, k) {
			actions = append(actions, "s3:PutObject")
		}
		if slices.Contains(access.Delete, k) {
			actions = append(actions, "s3:DeleteObject")
		}
		arn := "arn:aws:s3:::" + bucket + "/" + k
		if strings.HasSuffix(k, "/") {
			arn += "*"
		}
		i := slices.IndexFunc(groups, func(g *group) bool { return slices.Equal(g.actions, actions) })
		if i < 0 {
			groups = append(groups, &group{actions: actions})
			i = len(groups) - 1
		}
		groups[i].resources = append(groups[i].resources, arn)
	}
	statements := make([]map[string]any, 0, len(groups)+1)
	for _, g := range groups {
		statements = append(statements, map[string]any{"Effect": "Allow", "Action": g.actions, "Resource": g.resources})
	}
	statements = append(statements, map[string]any{"Effect": "Allow", "Action": []string{"s3:ListBucket", "s3:ListBucketVersions"},
		"Resource": []string{"arn:aws:s3:::" + bucket}})
	b, err := json.Marshal(map[string]any{"Version": "2012-10-17", "Statement": statements})
	if err != nil {
		return "", fmt.Errorf("session policy: %w", err)
	}
	return string(b), nil
}

// TempCredentials mints short-lived credentials scoped to opts.Access of the
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
	doc, err := SessionPolicy(s.bucket, opts.Access)
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
