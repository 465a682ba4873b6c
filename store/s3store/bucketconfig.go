package s3store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// qo owns one statement of a bucket's policy and one rule of its CORS
// configuration, named by these; it replaces them and leaves every other
// statement and rule as it found them.
const (
	// PublicReadSid is the Sid of the policy statement that lets anyone
	// read the web UI's files (qo ui deploy).
	PublicReadSid = "QoWebUIPublicRead"
	// CORSRuleID is the ID of the CORS rule that lets the web UI's origins
	// call the bucket (qo ui deploy, qo dev).
	CORSRuleID = "qo-web-ui"
)

// MaxCORSRules is S3's limit on the rules of one bucket's CORS
// configuration.
const MaxCORSRules = 100

// ErrUnmergeable is returned when qo's statement or rule cannot be merged
// into a bucket's existing configuration without guessing: the operator
// has to add it.
var ErrUnmergeable = errors.New("cannot be merged safely")

// PublicReadStatement is the policy statement (Sid PublicReadSid) that
// lets anyone GET the objects under prefix.
func PublicReadStatement(bucket, prefix string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{
		"Sid": PublicReadSid, "Effect": "Allow", "Principal": "*",
		"Action": []string{"s3:GetObject"}, "Resource": []string{"arn:aws:s3:::" + bucket + "/" + prefix + "*"},
	})
	return b
}

// UICORSRule is qo's CORS rule (ID CORSRuleID): browsers from origins may
// GET, PUT, HEAD and DELETE and read the headers the web UI needs.
func UICORSRule(origins []string) types.CORSRule {
	return types.CORSRule{
		ID:             aws.String(CORSRuleID),
		AllowedOrigins: origins,
		AllowedMethods: CORSMethods,
		AllowedHeaders: []string{"*"},
		ExposeHeaders:  CORSExposeHeaders,
		MaxAgeSeconds:  aws.Int32(3600),
	}
}

func unmergeable(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrUnmergeable)
}

// MergePolicyStatement returns the bucket policy document policy ("" for
// none) with stmt in place of the statement that has its Sid (the first
// such one; further copies go), or appended when there is none. Every
// other statement and field is kept as it was. A document qo cannot read
// as a policy is refused with ErrUnmergeable rather than overwritten.
func MergePolicyStatement(policy string, stmt json.RawMessage) (string, error) {
	var mine map[string]json.RawMessage
	if err := json.Unmarshal(stmt, &mine); err != nil {
		return "", fmt.Errorf("merge bucket policy: the statement to add is not a JSON object: %w", err)
	}
	var sid string
	if err := json.Unmarshal(mine["Sid"], &sid); err != nil || sid == "" {
		return "", errors.New("merge bucket policy: the statement to add has no Sid")
	}
	if len(bytes.TrimSpace([]byte(policy))) == 0 {
		return encodeJSON(map[string]any{"Version": "2012-10-17", "Statement": []json.RawMessage{stmt}})
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal([]byte(policy), &doc); err != nil {
		return "", unmergeable("the bucket policy is not a JSON object (%v)", err)
	}
	raw, ok := doc["Statement"]
	if !ok {
		return "", unmergeable("the bucket policy has no Statement")
	}
	var list []json.RawMessage
	switch trimmed := bytes.TrimSpace(raw); {
	case bytes.HasPrefix(trimmed, []byte("[")):
		if err := json.Unmarshal(trimmed, &list); err != nil {
			return "", unmergeable("the bucket policy's Statement is not a list (%v)", err)
		}
	case bytes.HasPrefix(trimmed, []byte("{")):
		list = []json.RawMessage{trimmed} // a single statement may stand alone
	default:
		return "", unmergeable("the bucket policy's Statement is neither a list nor an object")
	}
	sids := make([]string, len(list))
	for i, st := range list {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(st, &fields); err != nil {
			return "", unmergeable("statement %d of the bucket policy is not an object", i+1)
		}
		if s, ok := fields["Sid"]; ok {
			if err := json.Unmarshal(s, &sids[i]); err != nil {
				return "", unmergeable("statement %d of the bucket policy has a Sid that is not a string", i+1)
			}
		}
	}
	out := upsert(list, func(i int) string { return sids[i] }, stmt, sid)
	merged, err := encodeJSON(out)
	if err != nil {
		return "", err
	}
	doc["Statement"] = json.RawMessage(merged)
	return encodeJSON(doc)
}

// encodeJSON is json.Marshal without HTML escaping (policies keep their
// text as written).
func encodeJSON(v any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", fmt.Errorf("encode bucket policy: %w", err)
	}
	return string(bytes.TrimSuffix(b.Bytes(), []byte("\n"))), nil
}

// MergeCORSRule returns rules with rule in place of the rule that has its
// ID (the first such one; further copies go), or appended when there is
// none; the other rules keep their content and order. More rules than S3
// allows is refused with ErrUnmergeable.
func MergeCORSRule(rules []types.CORSRule, rule types.CORSRule) ([]types.CORSRule, error) {
	id := aws.ToString(rule.ID)
	if id == "" {
		return nil, errors.New("merge CORS rules: the rule to add has no ID")
	}
	out := upsert(rules, func(i int) string { return aws.ToString(rules[i].ID) }, rule, id)
	if len(out) > MaxCORSRules {
		return nil, unmergeable("the bucket already has %d CORS rules, the most S3 allows", len(rules))
	}
	return out, nil
}

// BucketPolicy returns the bucket's policy document, "" when it has none.
func (s *Store) BucketPolicy(ctx context.Context) (string, error) {
	out, err := s.client.GetBucketPolicy(ctx, &s3.GetBucketPolicyInput{Bucket: aws.String(s.bucket)})
	if err != nil {
		e := s.wrap(ctx, "get bucket policy", "", err, mapOpts{})
		var se *Error
		if errors.As(e, &se) && se.Code == "NoSuchBucketPolicy" {
			return "", nil
		}
		return "", e
	}
	return aws.ToString(out.Policy), nil
}

// PutBucketPolicy replaces the bucket's policy document with policy.
func (s *Store) PutBucketPolicy(ctx context.Context, policy string) error {
	_, err := s.client.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String(s.bucket), Policy: aws.String(policy)})
	if err != nil {
		return s.wrap(ctx, "set bucket policy", "", err, mapOpts{bucketLevel: true})
	}
	return nil
}

// CORSRules returns the bucket's CORS rules, nil when it has none. A
// server without bucket CORS yields store.ErrNotSupported.
func (s *Store) CORSRules(ctx context.Context) ([]types.CORSRule, error) {
	out, err := s.client.GetBucketCors(ctx, &s3.GetBucketCorsInput{Bucket: aws.String(s.bucket)})
	if err != nil {
		e := s.wrap(ctx, "get bucket CORS", "", err, mapOpts{})
		var se *Error
		if errors.As(e, &se) && se.Code == "NoSuchCORSConfiguration" {
			return nil, nil
		}
		return nil, e
	}
	return out.CORSRules, nil
}

// PutCORSRules replaces the bucket's CORS configuration with rules. A
// server that answers 501 (MinIO, which exposes the headers the web UI
// needs by default) yields store.ErrNotSupported.
func (s *Store) PutCORSRules(ctx context.Context, rules []types.CORSRule) error {
	_, err := s.client.PutBucketCors(ctx, &s3.PutBucketCorsInput{
		Bucket:            aws.String(s.bucket),
		CORSConfiguration: &types.CORSConfiguration{CORSRules: slices.Clone(rules)},
	})
	if err != nil {
		return s.wrap(ctx, "set bucket CORS", "", err, mapOpts{bucketLevel: true})
	}
	return nil
}

// SetCORS implements store.Admin: qo's rule (UICORSRule, ID CORSRuleID)
// allows origins, in place of the one an earlier call set; the bucket's
// other rules stay as they are. A server without bucket CORS (MinIO, which
// exposes those headers by default) yields store.ErrNotSupported.
func (s *Store) SetCORS(ctx context.Context, origins []string) error {
	if len(origins) == 0 {
		return errors.New("set CORS: no origins given: pass the web UI's origin, e.g. http://localhost:8080, or * for any")
	}
	rules, err := s.CORSRules(ctx)
	if err != nil {
		return err
	}
	merged, err := MergeCORSRule(rules, UICORSRule(origins))
	if err != nil {
		return fmt.Errorf("set CORS: %w", err)
	}
	return s.PutCORSRules(ctx, merged)
}

// upsert returns items with item in place of the first one whose id (idOf
// its index) is id, further such ones dropped, or item appended when there
// is none; the others keep their order. Bucket policy statements (by Sid)
// and CORS rules (by ID) merge this way.
func upsert[T any](items []T, idOf func(int) string, item T, id string) []T {
	out := make([]T, 0, len(items)+1)
	replaced := false
	for i, it := range items {
		switch {
		case idOf(i) != id:
			out = append(out, it)
		case !replaced:
			out = append(out, item)
			replaced = true
		}
	}
	if !replaced {
		out = append(out, item)
	}
	return out
}
