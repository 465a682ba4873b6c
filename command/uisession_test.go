package command

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/httpapi"
)

// TestUISessionExchange: qo ui serve's page exchanges its link's code for
// the credentials once; a second exchange, an expired code, another site's
// page or another Host name (DNS rebinding) get nothing.
func TestUISessionExchange(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	codes := httpapi.NewLoginCodes[url.Values](10*time.Minute, clock)
	secrets := url.Values{"ak": {"AK"}, "sk": {"SECRET"}, "st": {"TOKEN"}, "ro": {"1"}}
	h := uiSessionHandler(codes)
	exchange := func(code string, hdr ...string) (int, map[string]any) {
		r := httptest.NewRequest("POST", "http://127.0.0.1:8090/session", strings.NewReader(`{"code":"`+code+`"}`))
		r.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(hdr); i += 2 {
			if hdr[i] == "Host" {
				r.Host = hdr[i+1]
			} else {
				r.Header.Set(hdr[i], hdr[i+1])
			}
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		require.Equal(t, "no-store", w.Header().Get("Cache-Control"))
		var body map[string]any
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body), w.Body.String())
		return w.Code, body
	}
	code, _, err := codes.New(secrets)
	require.NoError(t, err)

	for _, tc := range []struct {
		name   string
		hdr    []string
		status int
	}{
		{"another site", []string{"Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"}, http.StatusForbidden},
		{"a sibling site", []string{"Sec-Fetch-Site", "same-site"}, http.StatusForbidden},
		{"an opaque origin", []string{"Origin", "null"}, http.StatusForbidden},
		{"a rebound name", []string{"Host", "rebound.example:8090"}, http.StatusMisdirectedRequest},
		{"a form", []string{"Content-Type", "text/plain"}, http.StatusUnsupportedMediaType},
	} {
		status, body := exchange(code, tc.hdr...)
		require.Equal(t, tc.status, status, "%s: %v", tc.name, body)
	}

	status, body := exchange(code, "Origin", "http://127.0.0.1:8090", "Sec-Fetch-Site", "same-origin")
	require.Equal(t, http.StatusOK, status, "%v", body)
	require.Equal(t, map[string]any{"ak": "AK", "sk": "SECRET", "st": "TOKEN", "ro": "1"}, body)

	status, body = exchange(code)
	require.Equal(t, http.StatusUnauthorized, status, "the code works once: %v", body)
	require.NotContains(t, body, "sk")

	late, _, err := codes.New(secrets)
	require.NoError(t, err)
	mu.Lock()
	now = now.Add(10 * time.Minute)
	mu.Unlock()
	status, _ = exchange(late)
	require.Equal(t, http.StatusUnauthorized, status, "an expired code")
}
