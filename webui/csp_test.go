package webui

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The page deployed into a bucket carries its Content-Security-Policy in
// a meta element: scripts from its origin only, requests to the S3
// endpoint and the origins given, nothing injected through them.
func TestDeployedIndexCarriesCSP(t *testing.T) {
	t.Parallel()
	index, err := DeployedIndex([]string{"https://s3.eu-west-1.amazonaws.com", "http://127.0.0.1:9000/", "https://s3.eu-west-1.amazonaws.com"})
	require.NoError(t, err)
	page := string(index)
	require.Contains(t, page, `<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src &#39;none&#39;; script-src &#39;self&#39;; style-src &#39;self&#39;; img-src &#39;self&#39; data:; connect-src &#39;self&#39; https://s3.eu-west-1.amazonaws.com http://127.0.0.1:9000; base-uri &#39;none&#39;; form-action &#39;none&#39;; object-src &#39;none&#39;">`)
	require.Less(t, strings.Index(page, "Content-Security-Policy"), strings.Index(page, "<script"), "the policy comes before any script")
	require.NotContains(t, page, "<script>", "no inline script")

	for _, bad := range []string{"https://x; script-src *", "javascript:alert(1)", "https://x/path", "*", "https://a@b", "ftp://x", "https://x?y"} {
		_, err := DeployedIndex([]string{bad})
		require.Error(t, err, bad)
		require.Contains(t, err.Error(), "want scheme://host[:port]")
	}
}

// The page served by qo (qo serve, qo ui serve, qo dev) may send requests
// to its own origin and the origins given only, never anywhere: a script
// injected into it could not send the credentials it holds elsewhere.
func TestHandlerCSPNamesItsOrigins(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		connect []string
		want    string
	}{
		{nil, "connect-src 'self';"},
		{[]string{"http://127.0.0.1:7070/"}, "connect-src 'self' http://127.0.0.1:7070;"},
	} {
		h, err := Handler(tc.connect...)
		require.NoError(t, err)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		require.Equal(t, http.StatusOK, rec.Code)
		csp := rec.Header().Get("Content-Security-Policy")
		require.Contains(t, csp, tc.want, tc.connect)
		require.Contains(t, csp, "frame-ancestors 'none'")
		require.NotContains(t, csp, "*", "no wildcard origin")
	}
	_, err := Handler("https://x; connect-src *")
	require.ErrorContains(t, err, "want scheme://host[:port]")
}
