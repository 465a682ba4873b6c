package queue

import (
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
)

// The ready index's keys (see doc.go, "Key layout" and "Task keys").

// ReadyPartition names a partition of the ready index, one task type in
// one shard: "{type}/{shard}" (see doc.go, "Key layout"). Its entries are
// the keys under ReadyPartitionPrefix(partition), in rank order.
func ReadyPartition(typ, shard string) string { return typ + "/" + shard }

// ReadyPartitionPrefix is the key prefix of a ready partition (see
// ReadyPartition): "ready/{type}/{shard}/". As a LIST's StartAfter it
// begins at the partition's first entry.
func ReadyPartitionPrefix(partition string) string { return ReadyPrefix + partition + "/" }

// ReadyKeyPartition is the partition (see ReadyPartition) a key under
// ready/ lies in: that of an entry, of a partition prefix ("ready/t/s/"
// gives "t/s"), or of any StartAfter or next key of a listing. "" when the
// key is not under ready/ or has fewer than two segments below it.
// Partitions sort as their keys do: for two partitions of a queue,
// a < b exactly when the keys of a sort before those of b.
func ReadyKeyPartition(key string) string {
	rest, ok := strings.CutPrefix(key, ReadyPrefix)
	if !ok {
		return ""
	}
	typ, rest, ok := strings.Cut(rest, "/")
	shard, _, _ := strings.Cut(rest, "/")
	if !ok || typ == "" || shard == "" {
		return ""
	}
	return ReadyPartition(typ, shard)
}

// ReadyKey is the ready-index key of a pending task:
// "ready/{type}/{shard}/{rank ms}~{priority}~{id}", where the rank is
// available_at moved by the priority (see doc.go, "Priorities"); a task
// with a key has its entry one segment lower, in its key's section of the
// partition, "ready/{type}/{shard}/-{key}/{rank ms}~{priority}~{id}" (see
// doc.go, "Task keys").
func ReadyKey(t *Task) string {
	return readyKey(t.AvailableAt, t.Priority, t.Shard, t.Type, t.ID, t.TaskKey)
}

// rankOf is the time a ready entry sorts under.
func rankOf(availableAt time.Time, p Priority) time.Time { return availableAt.Add(p.offset()) }

func readyKey(availableAt time.Time, p Priority, shard, typ string, id uuid.UUID, key string) string {
	if !p.Valid() {
		p = PriorityNormal
	}
	name := joinFields(unixMS(rankOf(availableAt, p)), string(p), id.String())
	return readySectionPrefix(ReadyPartition(typ, shard), key) + name
}

// KeySectionMark begins the segment of a key's section in a ready
// partition, "-{key}/" (see doc.go, "Task keys"). It sorts before every
// digit, so a partition's key sections come before its entries without a
// key.
const KeySectionMark = "-"

// readySectionPrefix is the prefix of a ready partition's section of
// task key key: the partition's own prefix for "" (tasks without a key).
func readySectionPrefix(partition, key string) string {
	if key == "" {
		return ReadyPartitionPrefix(partition)
	}
	return ReadyPartitionPrefix(partition) + KeySectionMark + key + "/"
}

// sectionEnd sorts after every entry name of a section and before the
// next section: entry names begin with a digit, sections with
// KeySectionMark.
const sectionEnd = "~"

// ReadyKeySectionEnd is, for a key inside a key's section of a ready
// partition ("ready/{type}/{shard}/-{key}/..."), the StartAfter that
// begins past the whole section: at the partition's next section, or at
// its entries without a key. ok is false for any other key.
func ReadyKeySectionEnd(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, ReadyPrefix)
	parts := strings.SplitN(rest, "/", 4)
	if !ok || len(parts) < 4 || !strings.HasPrefix(parts[2], KeySectionMark) {
		return "", false
	}
	return ReadyPrefix + parts[0] + "/" + parts[1] + "/" + parts[2] + "/" + sectionEnd, true
}

// ParseReadyKey decodes a ready-index key of this layout (see
// parseLayout4ReadyKey and parseLayout3ReadyKey for the ones before).
func ParseReadyKey(key string) (ReadyEntry, error) {
	rest, _ := strings.CutPrefix(key, ReadyPrefix)
	parts := strings.Split(rest, "/")
	var f []string
	var taskKey *string
	switch {
	case len(parts) == 3:
		f = strings.Split(parts[2], FieldSep)
	case len(parts) == 4 && strings.HasPrefix(parts[2], KeySectionMark):
		f = strings.Split(parts[3], FieldSep)
		k := strings.TrimPrefix(parts[2], KeySectionMark)
		taskKey = &k
	}
	if !strings.HasPrefix(key, ReadyPrefix) || len(f) != 3 {
		return ReadyEntry{}, fmt.Errorf("%q is not a ready index key (want ready/{type}/{shard}/{ms}~{priority}~{id}, or ready/{type}/{shard}/-{key}/{ms}~{priority}~{id})", key)
	}
	return readyEntry(key, parts[1], parts[0], f[0], f[1], f[2], taskKey)
}

// parseLayout4ReadyKey decodes a ready-index key of a task with a key
// in layout 4, "ready/{type}/{shard}/{ms}~{priority}~{id}~{key}": the
// key was the entry's last field, in the partition's one run of entries
// (see doc.go, "Key layout"). Entries without a key did not change.
func parseLayout4ReadyKey(key string) (ReadyEntry, error) {
	rest, _ := strings.CutPrefix(key, ReadyPrefix)
	parts := strings.Split(rest, "/")
	var f []string
	if len(parts) == 3 {
		f = strings.Split(parts[2], FieldSep)
	}
	if !strings.HasPrefix(key, ReadyPrefix) || len(f) != 4 {
		return ReadyEntry{}, fmt.Errorf("%q is not a ready index key of layout 4 (want ready/{type}/{shard}/{ms}~{priority}~{id}~{key})", key)
	}
	return readyEntry(key, parts[1], parts[0], f[0], f[1], f[2], &f[3])
}

// parseLayout3ReadyKey decodes a ready-index key of layout 3,
// "ready/{shard}/{ms}~{type}~{priority}~{id}[~{key}]": the fields of a
// current one, the type among them (see doc.go, "Key layout").
func parseLayout3ReadyKey(key string) (ReadyEntry, error) {
	shard, f, ok := entryFields(key, ReadyPrefix, 4, 1)
	if !ok {
		return ReadyEntry{}, fmt.Errorf("%q is not a ready index key of layout 3 (want ready/{shard}/{ms}~{type}~{priority}~{id}, or ~{key} after the id)", key)
	}
	var taskKey *string
	if len(f) == 5 {
		taskKey = &f[4]
	}
	return readyEntry(key, shard, f[1], f[0], f[2], f[3], taskKey)
}

// readyEntry checks and decodes the fields of ready-index key (taskKey nil
// when the key has none).
func readyEntry(key, shard, typ, ms, priority, id string, taskKey *string) (ReadyEntry, error) {
	if !isHex(shard) || len(shard) > 2 {
		return ReadyEntry{}, fmt.Errorf("ready index key %q: bad shard %q", key, shard)
	}
	rank, ok := parseMS(ms)
	if !ok {
		return ReadyEntry{}, fmt.Errorf("ready index key %q: bad timestamp %q", key, ms)
	}
	if ValidateType(typ) != nil {
		return ReadyEntry{}, fmt.Errorf("ready index key %q: bad task type %q", key, typ)
	}
	p := Priority(priority)
	if !p.Valid() {
		return ReadyEntry{}, fmt.Errorf("ready index key %q: bad priority %q", key, priority)
	}
	uid, err := uuid.Parse(id)
	if err != nil || uid.String() != id || !shardMatches(uid, shard) {
		return ReadyEntry{}, fmt.Errorf("ready index key %q: bad task id %q", key, id)
	}
	e := ReadyEntry{Key: key, ID: uid, Shard: shard, Type: typ, Priority: p, Rank: rank, AvailableAt: rank.Add(-p.offset())}
	if taskKey != nil {
		if ValidateTaskKey(*taskKey) != nil {
			return ReadyEntry{}, fmt.Errorf("ready index key %q: bad task key %q", key, *taskKey)
		}
		e.TaskKey = *taskKey
	}
	return e, nil
}
