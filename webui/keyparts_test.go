package webui

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
)

// keyPartCase is one value of one kind of key part and whether the Go
// rules accept it; test/keyparts.test.js checks that the page's
// validators (src/queue.js) answer the same.
type keyPartCase struct {
	Kind  string `json:"kind"`
	Value string `json:"value"`
	OK    bool   `json:"ok"`
}

// shardID is a task id whose first characters are a shard of 1 or 2.
const shardID = "0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b"

// keyPartRules are the Go rules each kind of part must pass before it
// becomes part of a key.
var keyPartRules = map[string]func(string) bool{
	"task_type":     func(s string) bool { return queue.ValidateType(s) == nil },
	"worker_id":     func(s string) bool { return queue.ValidateWorkerID(s) == nil },
	"schedule_name": func(s string) bool { return queue.ValidateScheduleName(s) == nil },
	"workflow_name": func(s string) bool { return queue.ValidateWorkflowName("workflow name", s) == nil },
	"lease_id":      func(s string) bool { return queue.ValidateLeaseID(s) == nil },
	// A task id as keys hold it: the canonical form (parseTaskKey's
	// id.String() == name).
	"task_id": func(s string) bool {
		id, err := queue.ParseID(s)
		return err == nil && id.String() == s
	},
	// A shard, checked with an id it is the shard of (the id's first
	// characters replaced by it).
	"shard": func(s string) bool {
		_, _, err := queue.ParseWaitingKey(queue.WaitingPrefix + s + "/" + s + shardID[min(len(s), len(shardID)):])
		return err == nil
	},
}

func TestKeyPartCases(t *testing.T) {
	t.Parallel()
	names := []string{
		"a", "send_email", "report.monthly", "a:b-c", ".hidden", "x..y", ".", "..", "...", "", "0/../queue.json",
		"a/b", "a~b", "a b", "a\x00b", "a\x1b[2J", "é", "a\u202eb", "%2e%2e", "a?b", "a#b",
		strings.Repeat("n", 64), strings.Repeat("n", 65), strings.Repeat("w", 128), strings.Repeat("w", 129),
	}
	ids := []string{
		shardID, "0197a3b2-6c1d-7e2f-8a3b-4c5d6e7f8a9b", strings.ToUpper(shardID), "0b6f4c2e8d1a4f7e9c3b2a5d6e7f8a9b",
		"{" + shardID + "}", "urn:uuid:" + shardID, "0/../queue.json", "0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9", "", "../" + shardID[3:],
		"0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9g",
	}
	shards := []string{"0", "0b", "", "0b6", "B", "g", ".", "..", "0/", "0b/..", "%30"}
	var cases []keyPartCase
	for _, kind := range []string{"task_type", "worker_id", "schedule_name", "workflow_name"} {
		for _, v := range names {
			cases = append(cases, keyPartCase{kind, v, keyPartRules[kind](v)})
		}
	}
	for _, kind := range []string{"task_id", "lease_id"} {
		for _, v := range append(ids, names...) {
			cases = append(cases, keyPartCase{kind, v, keyPartRules[kind](v)})
		}
	}
	for _, v := range append(shards, names...) {
		cases = append(cases, keyPartCase{"shard", v, keyPartRules["shard"](v)})
	}
	// The cases must exercise both answers of every kind, and the bounds.
	seen := map[string]map[bool]bool{}
	for _, c := range cases {
		if seen[c.Kind] == nil {
			seen[c.Kind] = map[bool]bool{}
		}
		seen[c.Kind][c.OK] = true
	}
	for kind := range keyPartRules {
		require.True(t, seen[kind][true] && seen[kind][false], "%s: the cases hold no accepted or no refused value", kind)
	}
	for kind, max := range constants().NameMax {
		require.True(t, keyPartRules[kind](strings.Repeat("n", max)), "%s: %d characters are allowed", kind, max)
		require.False(t, keyPartRules[kind](strings.Repeat("n", max+1)), "%s: %d characters are not", kind, max+1)
	}
	requireFile(t, filepath.Join("testdata", "keyparts.json"), cases)
}
