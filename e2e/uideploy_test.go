package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/store/s3store"
)

// gatewayStore opens the bucket of a `qo gateway` from the environment it
// printed.
func gatewayStore(t *testing.T, env []string) *s3store.Store {
	t.Helper()
	vars := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	s, err := s3store.New(t.Context(), s3store.Config{
		Endpoint: vars["S3_ENDPOINT"], Region: vars["S3_REGION"], Bucket: vars["S3_BUCKET"],
		AccessKey: vars["AWS_ACCESS_KEY_ID"], SecretKey: vars["AWS_SECRET_ACCESS_KEY"], PathStyle: true,
	})
	require.NoError(t, err)
	return s
}

// TestUIDeployKeepsBucketSettings: on a server that takes both (the
// embedded gateway), qo ui deploy adds its own bucket policy statement and
// CORS rule and keeps everything else, and a second deploy changes
// nothing.
func TestUIDeployKeepsBucketSettings(t *testing.T) {
	t.Parallel()
	env := startGateway(t)
	s := gatewayStore(t, env)
	ctx, bucket := t.Context(), aws.String(s.Bucket())
	deny := `{"Sid":"OperatorsOnlyLocked","Effect":"Deny","Principal":{"AWS":["*"]},"Action":["s3:PutObject"],"Resource":["arn:aws:s3:::` + s.Bucket() + `/locked/*"]}`
	_, err := s.Client().PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: bucket, Policy: aws.String(`{"Version":"2012-10-17","Statement":[` + deny + `]}`)})
	require.NoError(t, err)
	foreign := types.CORSRule{ID: aws.String("reports-app"), AllowedOrigins: []string{"https://reports.example.com"}, AllowedMethods: []string{"GET"}}
	_, err = s.Client().PutBucketCors(ctx, &s3.PutBucketCorsInput{Bucket: bucket, CORSConfiguration: &types.CORSConfiguration{CORSRules: []types.CORSRule{foreign}}})
	require.NoError(t, err)

	for run := 1; run <= 2; run++ {
		r := qo(t, env, "ui", "deploy", "--origin", "https://ops.example.com")
		require.Equal(t, 0, r.code, "run %d: %s", run, r)

		out, err := s.Client().GetBucketPolicy(ctx, &s3.GetBucketPolicyInput{Bucket: bucket})
		require.NoError(t, err)
		var doc struct{ Statement []map[string]any }
		require.NoError(t, json.Unmarshal([]byte(aws.ToString(out.Policy)), &doc), aws.ToString(out.Policy))
		sids := map[string]string{}
		for _, st := range doc.Statement {
			sid, _ := st["Sid"].(string)
			effect, _ := st["Effect"].(string)
			sids[sid] = effect
		}
		require.Equal(t, map[string]string{"OperatorsOnlyLocked": "Deny", s3store.PublicReadSid: "Allow"}, sids,
			"run %d: the Deny statement survives and qo's is there once", run)

		cors, err := s.Client().GetBucketCors(ctx, &s3.GetBucketCorsInput{Bucket: bucket})
		require.NoError(t, err)
		rules := map[string][]string{}
		for _, rule := range cors.CORSRules {
			rules[aws.ToString(rule.ID)] = rule.AllowedOrigins
		}
		require.Equal(t, map[string][]string{
			"reports-app":      {"https://reports.example.com"},
			s3store.CORSRuleID: {"https://ops.example.com"},
		}, rules, "run %d: the foreign CORS rule survives and qo's is there once", run)
	}
}
