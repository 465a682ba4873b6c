package deploy

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/qo-queue/qo/queue"
)

// roleOf is the role of a pod: its app.kubernetes.io/component label.
var roleOf = map[string]string{
	"init":    "admin",
	"worker":  "worker",
	"monitor": "monitor",
	"api":     "operator",
}

// podIdentity holds the names of the Secrets and the service account a pod
// template runs with.
type podIdentity struct {
	role, serviceAccount string
	secrets              []string // every Secret it reads
	s3Secrets            []string // the Secrets of AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY
}

func podCredentials(report func(string, ...any), what string, obj any) (podIdentity, bool) {
	ps, ok := podSpec(obj)
	if !ok {
		return podIdentity{}, false
	}
	var labels map[string]string
	switch v := obj.(type) {
	case interface{ GetLabels() map[string]string }:
		labels = v.GetLabels()
	}
	c := podIdentity{role: roleOf[labels["app.kubernetes.io/component"]], serviceAccount: ps.ServiceAccountName}
	if c.role == "" {
		report("%s: no known app.kubernetes.io/component label (%v), so no role", what, labels)
	}
	add := func(list *[]string, name string) {
		if !slices.Contains(*list, name) {
			*list = append(*list, name)
		}
	}
	for _, ctr := range append(slices.Clone(ps.InitContainers), ps.Containers...) {
		for _, e := range ctr.Env {
			if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
				if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil && strings.HasPrefix(e.Name, "AWS_") && e.Name != "AWS_REGION" {
					report("%s: %s from a ConfigMap: credentials belong in the role's Secret", what, e.Name)
				}
				continue
			}
			name := e.ValueFrom.SecretKeyRef.Name
			add(&c.secrets, name)
			if e.Name == "AWS_ACCESS_KEY_ID" || e.Name == "AWS_SECRET_ACCESS_KEY" {
				add(&c.s3Secrets, name)
			}
		}
		for _, ef := range ctr.EnvFrom {
			if ef.SecretRef != nil {
				add(&c.secrets, ef.SecretRef.Name)
				add(&c.s3Secrets, ef.SecretRef.Name)
			}
		}
	}
	for _, v := range ps.Volumes {
		if v.Secret != nil {
			add(&c.secrets, v.Secret.SecretName)
		}
	}
	return c, true
}

// identityProblems: every pod runs as a service account of its own role
// (declared, with no API token mounted) and reads only Secrets no other role
// reads; the workers' Secrets are not the init Job's.
func identityProblems(docs []doc) []string {
	var problems []string
	report := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	accounts := map[string]*corev1.ServiceAccount{}
	for _, d := range docs {
		if sa, ok := d.obj.(*corev1.ServiceAccount); ok && !d.patch {
			accounts[sa.Name] = sa
		}
	}
	saRoles := map[string][]string{}
	secretRoles := map[string][]string{}
	byRole := map[string][]podIdentity{}
	for _, d := range docs {
		if d.patch {
			continue
		}
		what := d.file + ": " + d.kind + " " + metaOf(d.obj).Name
		c, ok := podCredentials(report, what, d.obj)
		if !ok {
			continue
		}
		byRole[c.role] = append(byRole[c.role], c)
		switch sa := accounts[c.serviceAccount]; {
		case c.serviceAccount == "" || c.serviceAccount == "default":
			report("%s runs as the namespace's default service account: give it its role's own", what)
		case sa == nil:
			report("%s: service account %s is not among the manifests", what, c.serviceAccount)
		case sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken:
			report("service account %s mounts a Kubernetes API token: qo needs none", sa.Name)
		}
		if !slices.Contains(saRoles[c.serviceAccount], c.role) {
			saRoles[c.serviceAccount] = append(saRoles[c.serviceAccount], c.role)
		}
		if len(c.s3Secrets) != 1 {
			report("%s: S3 keys from Secrets %v, want one Secret of its role", what, c.s3Secrets)
		}
		for _, s := range c.secrets {
			if !slices.Contains(secretRoles[s], c.role) {
				secretRoles[s] = append(secretRoles[s], c.role)
			}
		}
	}
	for sa, roles := range saRoles {
		if len(roles) > 1 {
			sort.Strings(roles)
			report("service account %s is shared by roles %v: one per role", sa, roles)
		}
	}
	for s, roles := range secretRoles {
		if len(roles) > 1 {
			sort.Strings(roles)
			report("Secret %s is read by roles %v: one per role", s, roles)
		}
	}
	for _, role := range []string{"admin", "worker", "operator"} {
		if len(byRole[role]) == 0 {
			report("no pod of role %s", role)
		}
	}
	for _, w := range byRole["worker"] {
		for _, a := range byRole["admin"] {
			for _, s := range w.secrets {
				if slices.Contains(a.secrets, s) {
					report("the workers read %s, the Secret of the qo init Job (bucket admin)", s)
				}
			}
			if w.serviceAccount == a.serviceAccount {
				report("the workers run as %s, the service account of the qo init Job", a.serviceAccount)
			}
		}
	}
	return problems
}

// TestOneIdentityPerRole: the init Job (bucket admin), the workers, the
// monitor and qo serve each have their own service account and their own
// S3 credentials, in the manifests as written and as kustomize builds them
// with every component.
func TestOneIdentityPerRole(t *testing.T) {
	t.Run("files", func(t *testing.T) {
		for _, p := range identityProblems(load(t).docs) {
			t.Error(p)
		}
	})
	t.Run("built", func(t *testing.T) {
		kubectl, err := exec.LookPath("kubectl")
		if err != nil {
			t.Skip("kubectl not found")
		}
		built := kustomize(t, kubectl, []string{"example-secrets", "monitor", "keda"})
		var docs []doc
		for i, part := range documentSep.Split(built, -1) {
			if strings.TrimSpace(part) == "" {
				continue
			}
			d, err := decode([]byte(part))
			if err != nil {
				t.Fatalf("built document %d: %v", i+1, err)
			}
			d.file = "kustomize build"
			docs = append(docs, d)
		}
		for _, p := range identityProblems(docs) {
			t.Error(p)
		}
	})
}

// identityProblems reports pods that share a service account or a Secret,
// or the test above proves nothing.
func TestIdentityProblemsCatchSharing(t *testing.T) {
	o := load(t)
	for _, share := range []string{"service account", "Secret"} {
		var docs []doc
		for _, d := range o.docs {
			if _, ok := podSpec(d.obj); ok && !d.patch {
				b, err := json.Marshal(d.obj) // a deep copy, changed below
				if err != nil {
					t.Fatal(err)
				}
				c, err := decode(b)
				if err != nil {
					t.Fatal(err)
				}
				ps, _ := podSpec(c.obj)
				if share == "service account" {
					ps.ServiceAccountName = "qo-admin"
				}
				for _, ctr := range ps.Containers {
					for _, e := range ctr.Env {
						if share == "Secret" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && strings.HasPrefix(e.ValueFrom.SecretKeyRef.Name, "qo-s3-") {
							e.ValueFrom.SecretKeyRef.Name = "qo-s3-admin"
						}
					}
				}
				c.file = d.file
				d = c
			}
			docs = append(docs, d)
		}
		problems := identityProblems(docs)
		if !slices.ContainsFunc(problems, func(p string) bool {
			return strings.Contains(p, share+" qo") && strings.Contains(p, "shared by roles") || strings.Contains(p, share+" qo") && strings.Contains(p, "read by roles")
		}) {
			t.Errorf("every pod with the %s of the init Job: not reported (%q)", share, problems)
		}
	}
}

// An IAM statement of docs/deploy.md.
type statement struct {
	Sid       string
	Effect    string
	Action    any
	Resource  any
	Condition map[string]any
}

func strs(t *testing.T, v any) []string {
	t.Helper()
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				t.Fatalf("%v: not a string", e)
			}
			out = append(out, s)
		}
		return out
	}
	t.Fatalf("%v: want a string or a list of strings", v)
	return nil
}

// docPolicies reads the JSON policies of docs/deploy.md, by role: the Sid
// prefix QoProducer, QoWorker, QoOperator, QoAdmin or QoWebUI of its
// statements. A grant is "action resource", the resource being "" for the
// bucket and the key, or the prefix with its "/", otherwise.
func docPolicies(t *testing.T) map[string]map[string]bool {
	t.Helper()
	b, err := os.ReadFile("../docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	sidRole := regexp.MustCompile(`^Qo(Producer|Worker|Operator|Admin|WebUI)[A-Z]`)
	out := map[string]map[string]bool{}
	for i, m := range regexp.MustCompile("(?s)```json\n(.*?)```").FindAllSubmatch(b, -1) {
		var p struct {
			Version   string
			Statement []statement
		}
		if err := json.Unmarshal(m[1], &p); err != nil {
			t.Errorf("docs/deploy.md, JSON block %d: %v", i+1, err)
			continue
		}
		if p.Version != "2012-10-17" {
			t.Errorf("JSON block %d: Version %q", i+1, p.Version)
		}
		role := ""
		for _, s := range p.Statement {
			sm := sidRole.FindStringSubmatch(s.Sid)
			if sm == nil {
				t.Errorf("JSON block %d: Sid %q names no role (QoProducer..., QoWorker..., QoOperator..., QoAdmin..., QoWebUI...)", i+1, s.Sid)
				continue
			}
			if role != "" && sm[1] != role {
				t.Errorf("JSON block %d mixes roles %s and %s", i+1, role, sm[1])
			}
			role = sm[1]
			if out[role] == nil {
				out[role] = map[string]bool{}
			}
			if s.Effect != "Allow" || s.Condition != nil && role != "WebUI" {
				t.Errorf("%s: want a plain Allow", s.Sid)
			}
			for _, r := range strs(t, s.Resource) {
				key := ""
				if r != "arn:aws:s3:::my-queue" {
					k, ok := strings.CutPrefix(r, "arn:aws:s3:::my-queue/")
					if !ok {
						t.Errorf("%s: resource %s outside the bucket", s.Sid, r)
						continue
					}
					key = strings.TrimSuffix(k, "*")
					if strings.Contains(key, "*") || strings.HasSuffix(k, "*") != strings.HasSuffix(key, "/") {
						t.Errorf("%s: resource %s: want a key, or a prefix ending in /*", s.Sid, r)
					}
				}
				for _, a := range strs(t, s.Action) {
					if strings.Contains(a, "*") {
						t.Errorf("%s: wildcard action %s", s.Sid, a)
					}
					if (key == "") != slices.Contains(bucketActions, a) {
						t.Errorf("%s: %s on %s: bucket actions go on the bucket, object actions on keys", s.Sid, a, r)
					}
					out[role][a+" "+key] = true
				}
			}
		}
	}
	return out
}

var bucketActions = []string{
	"s3:ListBucket", "s3:ListBucketVersions", "s3:GetBucketVersioning", "s3:PutBucketVersioning",
	"s3:GetLifecycleConfiguration", "s3:PutLifecycleConfiguration", "s3:CreateBucket",
	"s3:PutBucketPolicy", "s3:GetBucketPolicy", "s3:PutBucketCORS", "s3:GetBucketCORS",
}

// grants expands {actions: resources} into the "action resource" set.
func grants(m map[string][]string) map[string]bool {
	out := map[string]bool{}
	for actions, resources := range m {
		for _, a := range strings.Fields(actions) {
			for _, r := range resources {
				out[a+" "+r] = true
			}
		}
	}
	return out
}

var indexes = []string{queue.ReadyPrefix, queue.LeasesPrefix, queue.WaitingPrefix, queue.DeadPrefix}

// The rights of each role, derived from the code each runs (see
// docs/deploy.md): the policy of the docs must grant exactly these.
var wantPolicies = map[string]map[string]bool{
	"Producer": grants(map[string][]string{
		"s3:ListBucket s3:GetBucketVersioning":          {""},
		"s3:GetObject":                                  {queue.ConfigKey},
		"s3:GetObject s3:PutObject s3:PutObjectTagging": {queue.TasksPrefix, queue.DataPrefix, queue.IdempotencyPrefix},
		"s3:PutObject":                                  indexes,
		"s3:GetObject s3:PutObject":                     {queue.WorkflowsPrefix, queue.WorkflowNamesPrefix},
	}),
	"Worker": grants(map[string][]string{
		"s3:ListBucket s3:GetBucketVersioning":          {""},
		"s3:GetObject":                                  {queue.ConfigKey, queue.ControlKey},
		"s3:GetObject s3:PutObject s3:PutObjectTagging": {queue.TasksPrefix, queue.IdempotencyPrefix},
		"s3:GetObject s3:GetObjectVersion s3:PutObject s3:PutObjectTagging s3:DeleteObject": {queue.DataPrefix},
		"s3:GetObject s3:PutObject s3:DeleteObject":                                         append(slices.Clone(indexes), queue.WorkersPrefix, queue.EdgesPrefix),
		"s3:GetObject s3:PutObject":                                                         {queue.SchedulesPrefix, queue.ShardLeasePrefix, queue.MonitorPrefix},
		// The leading monitor prunes the throughput rollup's old hours.
		"s3:DeleteObject": {queue.ThroughputPrefix},
	}),
	"Operator": grants(map[string][]string{
		"s3:ListBucket s3:ListBucketVersions s3:GetBucketVersioning": {""},
		"s3:GetObject": {queue.ConfigKey, queue.WorkersPrefix, queue.ShardLeasePrefix, queue.MonitorPrefix},
		"s3:GetObject s3:GetObjectVersion s3:PutObject s3:PutObjectTagging": {queue.TasksPrefix, queue.DataPrefix, queue.IdempotencyPrefix},
		"s3:GetObject s3:PutObject s3:DeleteObject":                         append(slices.Clone(indexes), queue.EdgesPrefix),
		"s3:GetObject s3:PutObject":                                         {queue.ControlKey, queue.SchedulesPrefix, queue.WorkflowsPrefix, queue.WorkflowNamesPrefix},
	}),
	// The web UI's role (qo ui url --role-arn): what its links read, and
	// what operator links write (command/ui.go's linkAccess).
	"WebUI": grants(map[string][]string{
		"s3:ListBucket s3:ListBucketVersions": {""},
		"s3:GetObject s3:GetObjectVersion": {queue.ConfigKey, queue.DataPrefix, queue.LeasesPrefix, queue.WorkersPrefix,
			queue.SchedulesPrefix, queue.IdempotencyPrefix, queue.WorkflowsPrefix, queue.WorkflowNamesPrefix, queue.ThroughputPrefix},
		"s3:GetObject s3:GetObjectVersion s3:PutObject":                 {queue.ControlKey, queue.TasksPrefix},
		"s3:GetObject s3:GetObjectVersion s3:PutObject s3:DeleteObject": {queue.ReadyPrefix, queue.WaitingPrefix, queue.DeadPrefix, queue.EdgesPrefix},
		"s3:DeleteObject": {queue.LeasesPrefix},
	}),
	"Admin": grants(map[string][]string{
		"s3:ListBucket s3:GetBucketVersioning s3:PutBucketVersioning s3:GetLifecycleConfiguration s3:PutLifecycleConfiguration": {""},
		"s3:GetObject s3:PutObject": {queue.ConfigKey, queue.ProbeKey},
	}),
}

// TestDocsPolicies: the IAM policies of docs/deploy.md parse, and each
// role's grants exactly the actions on exactly the keys its code uses: no
// worker may change bucket settings, write the configuration or the pause
// switches, list versions or delete a task; nothing reaches ui/ (the web
// UI's files, which every operator's browser runs).
func TestDocsPolicies(t *testing.T) {
	have := docPolicies(t)
	for role, want := range wantPolicies {
		got := have[role]
		if got == nil {
			t.Errorf("docs/deploy.md has no %s policy (statements with Sid Qo%s...)", role, role)
			continue
		}
		var extra, missing []string
		for g := range got {
			if !want[g] {
				extra = append(extra, g)
			}
		}
		for g := range want {
			if !got[g] {
				missing = append(missing, g)
			}
		}
		sort.Strings(extra)
		sort.Strings(missing)
		if len(extra) > 0 {
			t.Errorf("the %s policy grants more than its role needs: %v", role, extra)
		}
		if len(missing) > 0 {
			t.Errorf("the %s policy lacks what its role does: %v", role, missing)
		}
	}
	// Whatever the table says, these hold.
	layout := queue.Keys()
	layout = append(layout, queue.ProbeKey, queue.ThroughputPrefix)
	for role, got := range have {
		for g := range got {
			action, key, _ := strings.Cut(g, " ")
			switch {
			case strings.HasPrefix(key, "ui/"):
				t.Errorf("the %s policy reaches %s: the web UI's files stay out of every role's reach", role, key)
			case key != "" && !slices.Contains(layout, key):
				t.Errorf("the %s policy reaches %s, which is not a key of the queue (queue.Keys)", role, key)
			case action == "s3:DeleteObject" && key == queue.TasksPrefix:
				t.Errorf("the %s policy may delete task objects: only lifecycle rules do", role)
			}
			if role == "WebUI" && (key == queue.ConfigKey || key == queue.MonitorPrefix || key == queue.ShardLeasePrefix || key == queue.WorkersPrefix) && action != "s3:GetObject" && action != "s3:GetObjectVersion" {
				t.Errorf("the %s policy may %s %s: links never change the fleet's coordination", role, action, key)
			}
			if role == "Worker" || role == "Producer" {
				if key == "" && action != "s3:ListBucket" && action != "s3:GetBucketVersioning" {
					t.Errorf("the %s policy has the bucket action %s", role, action)
				}
				if (key == queue.ConfigKey || key == queue.ControlKey) && action != "s3:GetObject" {
					t.Errorf("the %s policy may %s %s", role, action, key)
				}
			}
		}
	}
	// The operator reads every key of the queue.
	for _, k := range queue.Keys() {
		if !have["Operator"]["s3:GetObject "+k] {
			t.Errorf("the operator cannot read %s", k)
		}
	}
}

// TestEveryKeyHasARole: every object name and prefix queue/keys.go
// declares is granted to some role of wantPolicies (itself or the prefix
// holding it), so a new kind of object cannot ship without a decision on
// who may touch it; without one, a least-privilege deployment meets
// AccessDenied the first time the code writes it.
func TestEveryKeyHasARole(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "../queue/keys.go", nil, 0)
	if err != nil {
		t.Fatalf("read queue/keys.go: %v", err)
	}
	var granted []string
	for _, g := range wantPolicies {
		for ar := range g {
			_, key, _ := strings.Cut(ar, " ")
			if key != "" {
				granted = append(granted, key)
			}
		}
	}
	checked := 0
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if !strings.HasSuffix(name.Name, "Prefix") && !strings.HasSuffix(name.Name, "Key") || i >= len(vs.Values) {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					continue
				}
				key, err := strconv.Unquote(lit.Value)
				if err != nil || key == "" {
					continue
				}
				checked++
				if !slices.ContainsFunc(granted, func(g string) bool { return g == key || strings.HasSuffix(g, "/") && strings.HasPrefix(key, g) }) {
					t.Errorf("queue.%s (%q) is granted to no role: decide who may read and write it in wantPolicies and docs/deploy.md", name.Name, key)
				}
			}
		}
	}
	if checked < 15 {
		t.Fatalf("found %d keys and prefixes in queue/keys.go; the parse missed them", checked)
	}
}
