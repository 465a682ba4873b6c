package command

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/s3store"
	"github.com/qo-queue/qo/store/storetest"
)

// minioCLI points the qo commands run by runApp at a fresh bucket on the
// test S3 server, as a user's environment would, and returns its store.
// Tests using it change the environment: they do not run in parallel.
func minioCLI(t *testing.T) *s3store.Store {
	t.Helper()
	s := storetest.MinIO(t)
	cfg := storetest.S3Config(t, s.Bucket())
	t.Setenv("AWS_ACCESS_KEY_ID", cfg.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", cfg.SecretKey)
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("S3_ENDPOINT", cfg.Endpoint)
	t.Setenv("S3_BUCKET", s.Bucket())
	t.Setenv("S3_REGION", cfg.Region)
	return s
}

// policyStatements decodes a bucket policy's statements by Sid.
func policyStatements(t *testing.T, s *s3store.Store) (bySid map[string]map[string]any, n int) {
	t.Helper()
	out, err := s.Client().GetBucketPolicy(t.Context(), &s3.GetBucketPolicyInput{Bucket: aws.String(s.Bucket())})
	require.NoError(t, err)
	var doc struct {
		Statement []map[string]any
	}
	require.NoError(t, json.Unmarshal([]byte(aws.ToString(out.Policy)), &doc), aws.ToString(out.Policy))
	bySid = map[string]map[string]any{}
	for _, st := range doc.Statement {
		sid, _ := st["Sid"].(string)
		bySid[sid] = st
	}
	return bySid, len(doc.Statement)
}

// TestUIDeployKeepsBucketPolicyMinIO: qo ui deploy adds its statement to
// the bucket policy and leaves the others alone, however often it runs.
// (MinIO takes no bucket CORS rules; the gateway test in e2e covers them.)
func TestUIDeployKeepsBucketPolicyMinIO(t *testing.T) {
	s := minioCLI(t)
	bucket := s.Bucket()
	deny := `{"Sid":"OperatorsOnlyLocked","Effect":"Deny","Principal":{"AWS":["*"]},"Action":["s3:PutObject"],"Resource":["arn:aws:s3:::` + bucket + `/locked/*"]}`
	_, err := s.Client().PutBucketPolicy(t.Context(), &s3.PutBucketPolicyInput{
		Bucket: aws.String(bucket),
		Policy: aws.String(`{"Version":"2012-10-17","Statement":[` + deny + `]}`),
	})
	require.NoError(t, err)

	for run := range 2 {
		var out, errb bytes.Buffer
		code := runApp([]string{"qo", "ui", "deploy"}, &out, &errb)
		require.Equal(t, 0, code, "run %d: %s", run+1, errb.String())
		require.Contains(t, errb.String(), "does not take CORS rules", "MinIO answers 501 to PutBucketCors, as before")

		got, n := policyStatements(t, s)
		require.Equal(t, 2, n, "run %d: the operator's statement and qo's, once: %v", run+1, got)
		require.Contains(t, got, "OperatorsOnlyLocked", "the Deny statement survives the deploy")
		require.Equal(t, "Deny", got["OperatorsOnlyLocked"]["Effect"])
		qoStmt, ok := got[s3store.PublicReadSid]
		require.True(t, ok, "qo's statement is there: %v", got)
		require.Equal(t, "Allow", qoStmt["Effect"])
		require.Contains(t, strings.Join(toStrings(qoStmt["Resource"]), " "), "arn:aws:s3:::"+bucket+"/ui/*")
	}
}

// toStrings reads a policy field that is a string or a list of strings.
func toStrings(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, x := range v {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// TestUIDeployRefusesWhatItCannotRead: a deployer who may upload files but
// not read the bucket policy gets the statement to add by hand, and
// nothing changes.
func TestUIDeployRefusesWhatItCannotRead(t *testing.T) {
	s := minioCLI(t)
	cfg := storetest.S3Config(t, s.Bucket())
	client := sts.New(sts.Options{
		Region: cfg.Region, BaseEndpoint: aws.String(cfg.Endpoint),
		Credentials: credentials.NewStaticCredentialsProvider(cfg.AccessKey, cfg.SecretKey, ""),
	})
	policy := `{"Version":"2012-10-17","Statement":[
		{"Effect":"Allow","Action":["s3:GetBucketVersioning","s3:ListBucket","s3:PutBucketPolicy","s3:PutBucketCors","s3:GetBucketCors"],"Resource":["arn:aws:s3:::` + s.Bucket() + `"]},
		{"Effect":"Allow","Action":["s3:PutObject"],"Resource":["arn:aws:s3:::` + s.Bucket() + `/*"]}]}`
	out, err := client.AssumeRole(t.Context(), &sts.AssumeRoleInput{
		RoleArn: aws.String("arn:aws:iam::000000000000:role/deployer"), RoleSessionName: aws.String("deployer"),
		DurationSeconds: aws.Int32(900), Policy: aws.String(policy),
	})
	require.NoError(t, err)
	t.Setenv("AWS_ACCESS_KEY_ID", aws.ToString(out.Credentials.AccessKeyId))
	t.Setenv("AWS_SECRET_ACCESS_KEY", aws.ToString(out.Credentials.SecretAccessKey))
	t.Setenv("AWS_SESSION_TOKEN", aws.ToString(out.Credentials.SessionToken))

	var stdout, errb bytes.Buffer
	code := runApp([]string{"qo", "ui", "deploy"}, &stdout, &errb)
	require.Equal(t, exitStorage, code, errb.String())
	require.Contains(t, errb.String(), "nothing was changed")
	require.Contains(t, errb.String(), `"Sid": "`+s3store.PublicReadSid+`"`, "the statement to add is printed")
	require.Contains(t, errb.String(), "--no-public-read")

	got, err := s.BucketPolicy(t.Context())
	require.NoError(t, err)
	require.Empty(t, got)
	page, err := s.List(t.Context(), store.ListParams{Prefix: "ui/"})
	require.NoError(t, err)
	require.Empty(t, page.Objects, "nothing was uploaded")
}
