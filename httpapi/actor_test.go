package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/control"
	"github.com/qo-queue/qo/queue/schedule"
	"github.com/qo-queue/qo/store/storetest"
)

// The API's operator actions record the server and what it knows of the
// caller: how it authenticated (token, session, or a server without a
// token) and the connection's address, never a claim of the caller's.
func TestOperatorActionsNameTheServerAndCaller(t *testing.T) {
	t.Parallel()
	host, err := os.Hostname()
	require.NoError(t, err)
	ctx := context.Background()

	t.Run("no token", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, storetest.Backends()[0], Options{})
		actor := "qo serve on " + host + ", no token from 127.0.0.1"
		task := func(name string) *queue.Task {
			got, err := e.q.Get(ctx, e.tasks[name].ID)
			require.NoError(t, err)
			return got
		}
		for _, c := range []struct{ method, path, body, task string }{
			{"POST", "/api/tasks/" + e.tasks["pending"].ID.String() + "/cancel", "", "pending"},
			{"POST", "/api/dead/" + e.tasks["failed"].ID.String() + "/retry", "", "failed"},
			{"POST", "/api/tasks/" + e.tasks["done"].ID.String() + "/archive", "", "done"},
			{"POST", "/api/tasks/bulk", `{"op":"archive","ids":["` + e.tasks["failed2"].ID.String() + `"]}`, "failed2"},
		} {
			status, body, _ := e.do(t, c.method, c.path, c.body, "X-Qo-Actor", "mallory@nowhere")
			require.Equal(t, http.StatusOK, status, "%s %s: %v", c.method, c.path, body)
			require.Equal(t, actor, task(c.task).Actor, "%s %s", c.method, c.path)
		}
		status, body, _ := e.do(t, "POST", "/api/pause", `{"type":"email"}`)
		require.Equal(t, http.StatusOK, status, "%v", body)
		ctl, err := control.Read(ctx, e.q)
		require.NoError(t, err)
		require.Equal(t, actor, ctl.Actor)
		status, body, _ = e.do(t, "POST", "/api/schedules", `{"name":"nightly","cron":"@daily","task":{"task_type":"report"}}`)
		require.Equal(t, http.StatusCreated, status, "%v", body)
		obj, err := e.raw.Get(ctx, queue.ScheduleKey("nightly"))
		require.NoError(t, err)
		var s schedule.Schedule
		require.NoError(t, json.Unmarshal(obj.Body, &s))
		require.Equal(t, actor, s.Actor)
	})

	t.Run("token and session", func(t *testing.T) {
		t.Parallel()
		codes := NewLoginCodes[struct{}](5*time.Minute, time.Now)
		e := newEnv(t, storetest.Backends()[0], Options{Token: "0123456789abcdef0123456789abcdef", LoginCodes: codes})
		id := e.tasks["pending"].ID
		status, body, _ := e.do(t, "POST", "/api/tasks/"+id.String()+"/cancel", "")
		require.Equal(t, http.StatusOK, status, "%v", body)
		got, err := e.q.Get(ctx, id)
		require.NoError(t, err)
		require.Equal(t, "qo serve on "+host+", token from 127.0.0.1", got.Actor)

		code, _, err := codes.New(struct{}{})
		require.NoError(t, err)
		e.token = "" // a browser
		status, body, hdr := e.do(t, "POST", "/api/session", `{"code":"`+code+`"}`)
		require.Equal(t, http.StatusNoContent, status, "%v", body)
		cookie := (&http.Response{Header: hdr}).Cookies()[0]
		status, body, _ = e.do(t, "POST", "/api/tasks/"+id.String()+"/replay", "", "Cookie", SessionCookie+"="+cookie.Value)
		require.Equal(t, http.StatusOK, status, "%v", body)
		got, err = e.q.Get(ctx, id)
		require.NoError(t, err)
		require.Equal(t, "qo serve on "+host+", session from 127.0.0.1", got.Actor)
	})
}
