package s3store_test

import (
	"encoding/json"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/store/s3store"
)

func TestMergePolicyStatement(t *testing.T) {
	t.Parallel()
	qo := string(s3store.PublicReadStatement("b", "ui/"))
	deny := `{"Sid":"Keep","Effect":"Deny","Principal":"*","Action":"s3:*","Resource":"arn:aws:s3:::b/x/*","Condition":{"Bool":{"aws:SecureTransport":"false"}}}`
	anon := `{"Effect":"Allow","Principal":{"AWS":["arn:aws:iam::1:root"]},"Action":["s3:GetObject"],"Resource":["arn:aws:s3:::b/*"]}`
	oldQo := `{"Sid":"QoWebUIPublicRead","Effect":"Allow","Principal":"*","Action":["s3:GetObject"],"Resource":["arn:aws:s3:::b/old/*"]}`
	tests := []struct {
		name   string
		policy string
		want   []string // the statements of the result, in order
		err    string
	}{
		{"no policy", "", []string{qo}, ""},
		{"blank policy", " \n", []string{qo}, ""},
		{"others kept, qo appended", `{"Version":"2012-10-17","Statement":[` + deny + `,` + anon + `]}`, []string{deny, anon, qo}, ""},
		{"qo's replaced in place", `{"Version":"2012-10-17","Statement":[` + deny + `,` + oldQo + `,` + anon + `]}`, []string{deny, qo, anon}, ""},
		{"a second copy of qo's goes", `{"Version":"2012-10-17","Statement":[` + oldQo + `,` + deny + `,` + oldQo + `]}`, []string{qo, deny}, ""},
		{"a lone statement object", `{"Version":"2012-10-17","Statement":` + deny + `}`, []string{deny, qo}, ""},
		{"not JSON", `Version: 2012-10-17`, nil, "not a JSON object"},
		{"a JSON list", `[` + deny + `]`, nil, "not a JSON object"},
		{"no statements", `{"Version":"2012-10-17"}`, nil, "no Statement"},
		{"statement a string", `{"Statement":"allow all"}`, nil, "neither a list nor an object"},
		{"statement not an object", `{"Statement":[` + deny + `,42]}`, nil, "statement 2"},
		{"sid not a string", `{"Statement":[{"Sid":7,"Effect":"Deny"}]}`, nil, "Sid that is not a string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := s3store.MergePolicyStatement(tt.policy, json.RawMessage(qo))
			if tt.err != "" {
				require.ErrorIs(t, err, s3store.ErrUnmergeable)
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			var doc struct {
				Version   string
				Statement []json.RawMessage
			}
			require.NoError(t, json.Unmarshal([]byte(got), &doc), got)
			require.Equal(t, "2012-10-17", doc.Version, "the version is kept, or set on a new policy")
			require.Len(t, doc.Statement, len(tt.want), got)
			for i, want := range tt.want {
				require.JSONEq(t, want, string(doc.Statement[i]), "statement %d", i+1)
			}
			again, err := s3store.MergePolicyStatement(got, json.RawMessage(qo))
			require.NoError(t, err)
			require.Equal(t, got, again, "merging twice changes nothing")
		})
	}
}

func TestMergePolicyStatementKeepsOtherFields(t *testing.T) {
	t.Parallel()
	in := `{"Id":"corp-guardrails","Version":"2008-10-17","Statement":[{"Sid":"A&B","Effect":"Deny","Principal":"*","Action":"s3:DeleteBucket","Resource":"arn:aws:s3:::b"}]}`
	got, err := s3store.MergePolicyStatement(in, s3store.PublicReadStatement("b", "ui/"))
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(got), &doc))
	require.Equal(t, "corp-guardrails", doc["Id"])
	require.Equal(t, "2008-10-17", doc["Version"], "the operator's version stays")
	require.Contains(t, got, `"Sid":"A&B"`, "text is not HTML-escaped")
}

func TestMergeCORSRule(t *testing.T) {
	t.Parallel()
	qo := s3store.UICORSRule([]string{"https://ops.example.com"})
	foreign := types.CORSRule{ID: aws.String("reports"), AllowedOrigins: []string{"https://r.example.com"}, AllowedMethods: []string{"GET"}}
	noID := types.CORSRule{AllowedOrigins: []string{"*"}, AllowedMethods: []string{"HEAD"}}
	oldQo := s3store.UICORSRule([]string{"http://old.example.com"})
	many := make([]types.CORSRule, s3store.MaxCORSRules)
	for i := range many {
		many[i] = foreign
	}
	tests := []struct {
		name  string
		rules []types.CORSRule
		want  []types.CORSRule
		err   bool
	}{
		{"none", nil, []types.CORSRule{qo}, false},
		{"others kept, qo appended", []types.CORSRule{foreign, noID}, []types.CORSRule{foreign, noID, qo}, false},
		{"qo's replaced in place", []types.CORSRule{foreign, oldQo, noID}, []types.CORSRule{foreign, qo, noID}, false},
		{"a second copy of qo's goes", []types.CORSRule{oldQo, foreign, oldQo}, []types.CORSRule{qo, foreign}, false},
		{"full", many, nil, true},
		{"full but qo's is one of them", append(append([]types.CORSRule{}, many[1:]...), oldQo), append(append([]types.CORSRule{}, many[1:]...), qo), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := s3store.MergeCORSRule(tt.rules, qo)
			if tt.err {
				require.ErrorIs(t, err, s3store.ErrUnmergeable)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}
