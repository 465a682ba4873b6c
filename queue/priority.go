package queue

import (
	"strings"
	"time"
)

// Priority is a task's place in line relative to others (see doc.go,
// "Priorities").
type Priority string

// Priority levels, highest first.
const (
	PriorityHigh   Priority = "high"
	PriorityNormal Priority = "normal" // the default
	PriorityLow    Priority = "low"
)

// Priorities lists the levels, highest first.
var Priorities = []Priority{PriorityHigh, PriorityNormal, PriorityLow}

// PriorityStep is how far one level moves a task in line: a high task is
// ranked as if it had become available PriorityStep earlier, a low one as
// if PriorityStep later.
const PriorityStep = 15 * time.Minute

// Valid reports whether p is a known level.
func (p Priority) Valid() bool {
	for _, v := range Priorities {
		if p == v {
			return true
		}
	}
	return false
}

// Level orders priorities: 0 for high, 1 for normal, 2 for low.
func (p Priority) Level() int {
	for i, v := range Priorities {
		if p == v {
			return i
		}
	}
	return 1
}

// offset is what the priority adds to available_at to give the rank.
func (p Priority) offset() time.Duration {
	switch p {
	case PriorityHigh:
		return -PriorityStep
	case PriorityLow:
		return PriorityStep
	}
	return 0
}

// ParsePriority parses a level name ("" is normal), with a clear
// ErrInvalidInput otherwise.
func ParsePriority(s string) (Priority, error) {
	if s == "" {
		return PriorityNormal, nil
	}
	p := Priority(strings.ToLower(s))
	if !p.Valid() {
		return "", invalidInput("unknown priority %q (want one of %s)", s, joinNames(Priorities))
	}
	return p, nil
}

func joinNames[T ~string](vs []T) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = string(v)
	}
	return strings.Join(parts, ", ")
}
