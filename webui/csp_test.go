package webui

import (
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
