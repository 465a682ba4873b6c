package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/qo-queue/qo/metrics"
	"github.com/qo-queue/qo/monitor/view"
	"github.com/qo-queue/qo/queue"
)

const root = "kubernetes"

// kustomization is the part of kustomize's file format the manifests use;
// decoding strictly into it catches a misspelt field.
type kustomization struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Labels     []struct {
		Pairs            map[string]string `json:"pairs"`
		IncludeSelectors bool              `json:"includeSelectors,omitempty"`
	} `json:"labels,omitempty"`
	Resources  []string `json:"resources,omitempty"`
	Components []string `json:"components,omitempty"`
	Patches    []struct {
		Path string `json:"path"`
	} `json:"patches,omitempty"`
}

// The KEDA custom resources, as far as the manifests use them.
type scaledObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		ScaleTargetRef struct {
			APIVersion string `json:"apiVersion,omitempty"`
			Kind       string `json:"kind,omitempty"`
			Name       string `json:"name"`
		} `json:"scaleTargetRef"`
		PollingInterval *int32 `json:"pollingInterval,omitempty"`
		CooldownPeriod  *int32 `json:"cooldownPeriod,omitempty"`
		MinReplicaCount *int32 `json:"minReplicaCount,omitempty"`
		MaxReplicaCount *int32 `json:"maxReplicaCount,omitempty"`
		Triggers        []struct {
			Type              string            `json:"type"`
			Metadata          map[string]string `json:"metadata"`
			AuthenticationRef *struct {
				Name string `json:"name"`
				Kind string `json:"kind,omitempty"`
			} `json:"authenticationRef,omitempty"`
		} `json:"triggers"`
	} `json:"spec"`
}

type triggerAuthentication struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		SecretTargetRef []struct {
			Parameter string `json:"parameter"`
			Name      string `json:"name"`
			Key       string `json:"key"`
		} `json:"secretTargetRef"`
	} `json:"spec"`
}

// doc is one YAML document of a manifest, decoded.
type doc struct {
	file  string // relative to root
	kind  string
	obj   any
	patch bool // listed as a patch by a kustomization: a fragment
}

// objects decode every manifest under root (kustomization files apart)
// strictly into its API type.
type objects struct {
	docs           []doc
	kustomizations map[string]kustomization // by directory, relative to root
}

var documentSep = regexp.MustCompile(`(?m)^---[ \t]*$`)

func load(t *testing.T) *objects {
	t.Helper()
	o := &objects{kustomizations: map[string]kustomization{}}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if !strings.HasSuffix(path, ".yaml") {
			if !strings.HasSuffix(path, ".md") {
				t.Errorf("%s: only .yaml manifests belong here", rel)
			}
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if filepath.Base(path) == "kustomization.yaml" {
			var k kustomization
			if err := strict(b, &k); err != nil {
				t.Errorf("%s: %v", rel, err)
			}
			o.kustomizations[filepath.Dir(rel)] = k
			return nil
		}
		for i, part := range documentSep.Split(string(b), -1) {
			if strings.TrimSpace(stripComments(part)) == "" {
				continue
			}
			d, err := decode([]byte(part))
			if err != nil {
				t.Errorf("%s, document %d: %v", rel, i+1, err)
				continue
			}
			d.file = rel
			o.docs = append(o.docs, d)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(o.docs) == 0 {
		t.Fatal("no manifests found")
	}
	for dir, k := range o.kustomizations {
		for _, p := range patchPaths(k) {
			for i := range o.docs {
				if o.docs[i].file == filepath.Join(dir, p) {
					o.docs[i].patch = true
				}
			}
		}
	}
	return o
}

func stripComments(s string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// strict decodes YAML as the Kubernetes API server does with strict field
// validation: keys match field names case-sensitively, and an unknown or
// duplicate key is an error (encoding/json would match "stringdata" to
// StringData).
func strict(y []byte, v any) error {
	j, err := yaml.YAMLToJSONStrict(y)
	if err != nil {
		return err
	}
	strictErrs, err := kjson.UnmarshalStrict(j, v)
	if err != nil {
		return err
	}
	return errors.Join(strictErrs...)
}

// decode reads apiVersion and kind, then decodes the document strictly
// (unknown or duplicate fields are errors) into the matching type.
func decode(b []byte) (doc, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(b, &tm); err != nil {
		return doc{}, err
	}
	var obj any
	switch gvk := tm.APIVersion + " " + tm.Kind; gvk {
	case "v1 Namespace":
		obj = &corev1.Namespace{}
	case "v1 ServiceAccount":
		obj = &corev1.ServiceAccount{}
	case "v1 Secret":
		obj = &corev1.Secret{}
	case "v1 ConfigMap":
		obj = &corev1.ConfigMap{}
	case "v1 Service":
		obj = &corev1.Service{}
	case "apps/v1 Deployment":
		obj = &appsv1.Deployment{}
	case "batch/v1 Job":
		obj = &batchv1.Job{}
	case "autoscaling/v2 HorizontalPodAutoscaler":
		obj = &autoscalingv2.HorizontalPodAutoscaler{}
	case "keda.sh/v1alpha1 ScaledObject":
		obj = &scaledObject{}
	case "keda.sh/v1alpha1 TriggerAuthentication":
		obj = &triggerAuthentication{}
	default:
		return doc{}, fmt.Errorf("unexpected apiVersion and kind %q", gvk)
	}
	if err := strict(b, obj); err != nil {
		return doc{}, err
	}
	return doc{kind: tm.Kind, obj: obj}, nil
}

// find returns the objects of one kind and name: whole objects, or the
// patches to them.
func find[T any](o *objects, name string, patches bool) []T {
	var out []T
	for _, d := range o.docs {
		if v, ok := d.obj.(*T); ok && metaOf(d.obj).Name == name && d.patch == patches {
			out = append(out, *v)
		}
	}
	return out
}

func one[T any](t *testing.T, o *objects, name string) T {
	t.Helper()
	all := find[T](o, name, false)
	if len(all) != 1 {
		var zero T
		t.Fatalf("%d %T named %s, want 1", len(all), zero, name)
	}
	return all[0]
}

func metaOf(obj any) metav1.ObjectMeta {
	switch v := obj.(type) {
	case *scaledObject:
		return v.ObjectMeta
	case *triggerAuthentication:
		return v.ObjectMeta
	case metav1.Object:
		return metav1.ObjectMeta{Name: v.GetName(), Namespace: v.GetNamespace()}
	}
	return metav1.ObjectMeta{}
}

// podSpec returns the pod template of a Deployment or Job.
func podSpec(obj any) (*corev1.PodSpec, bool) {
	switch v := obj.(type) {
	case *appsv1.Deployment:
		return &v.Spec.Template.Spec, true
	case *batchv1.Job:
		return &v.Spec.Template.Spec, true
	}
	return nil, false
}

func TestManifestsDecodeStrictly(t *testing.T) {
	o := load(t)
	kinds := map[string]int{}
	for _, d := range o.docs {
		kinds[d.kind]++
		if metaOf(d.obj).Name == "" {
			t.Errorf("%s: a %s without metadata.name", d.file, d.kind)
		}
		if ns := metaOf(d.obj).Namespace; ns != "" {
			t.Errorf("%s: %s %s sets namespace %q: leave it to the kustomization", d.file, d.kind, metaOf(d.obj).Name, ns)
		}
	}
	for _, k := range []string{"Deployment", "Job", "Service", "ServiceAccount", "Secret", "ConfigMap", "HorizontalPodAutoscaler", "ScaledObject", "TriggerAuthentication"} {
		if kinds[k] == 0 {
			t.Errorf("no %s among the manifests", k)
		}
	}
}

// A misspelt field must fail, or the test above proves nothing.
func TestDecodeRejectsUnknownFields(t *testing.T) {
	for _, bad := range []string{
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {replica: 2}\n",
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  template:\n    spec:\n      containers: [{name: c, image: i, envv: []}]\n",
		"apiVersion: keda.sh/v1alpha1\nkind: ScaledObject\nmetadata: {name: x}\nspec: {minReplicas: 0}\n",
		"apiVersion: v1\nkind: Secret\nmetadata: {name: x}\nstringdata: {a: b}\n",
		"apiVersion: v1\nkind: Secret\nmetadata: {name: x}\ntype: Opaque\ntype: Opaque\n",
	} {
		if _, err := decode([]byte(bad)); err == nil {
			t.Errorf("decoded without an error:\n%s", bad)
		}
	}
}

// Every kustomization lists every manifest of its directory, every entry
// exists, and the top-level one names every component (commented out or not).
func TestKustomizationsListEveryFile(t *testing.T) {
	o := load(t)
	if _, ok := o.kustomizations["."]; !ok {
		t.Fatal("no kustomization.yaml at the top")
	}
	for dir, k := range o.kustomizations {
		wantKind := "Kustomization"
		if strings.HasPrefix(dir, "components/") {
			wantKind = "Component"
		}
		if k.Kind != wantKind {
			t.Errorf("%s/kustomization.yaml: kind %q, want %q", dir, k.Kind, wantKind)
		}
		listed := map[string]bool{}
		for _, r := range append(append(slices.Clone(k.Resources), k.Components...), patchPaths(k)...) {
			if listed[r] {
				t.Errorf("%s/kustomization.yaml: %s listed twice", dir, r)
			}
			listed[r] = true
			p := filepath.Join(root, dir, r)
			fi, err := os.Stat(p)
			if err != nil {
				t.Errorf("%s/kustomization.yaml: %v", dir, err)
				continue
			}
			if fi.IsDir() {
				if _, ok := o.kustomizations[filepath.Join(dir, r)]; !ok {
					t.Errorf("%s/kustomization.yaml: %s has no kustomization.yaml", dir, r)
				}
			}
		}
		entries, err := os.ReadDir(filepath.Join(root, dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".yaml") && e.Name() != "kustomization.yaml" && !listed[e.Name()] {
				t.Errorf("%s/kustomization.yaml does not list %s", dir, e.Name())
			}
		}
	}
	top, err := os.ReadFile(filepath.Join(root, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for dir := range o.kustomizations {
		if strings.HasPrefix(dir, "components/") && !bytes.Contains(top, []byte("- "+dir)) {
			t.Errorf("kustomization.yaml does not mention the component %s", dir)
		}
	}
}

func patchPaths(k kustomization) []string {
	var out []string
	for _, p := range k.Patches {
		out = append(out, p.Path)
	}
	return out
}

// sources is the text of the qo command's Go files (tests excluded): the
// root package, the command package and the dev environment it drives.
func sources(t *testing.T) string {
	t.Helper()
	var files []string
	for _, pattern := range []string{"../*.go", "../command/*.go", "../devenv/*.go"} {
		matched, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, matched...)
	}
	var b strings.Builder
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(src)
	}
	if b.Len() == 0 {
		t.Fatal("no Go sources of the qo command found")
	}
	return b.String()
}

// sdkEnv are the variables qo does not name itself: the AWS SDK reads them.
var sdkEnv = map[string]bool{"AWS_ACCESS_KEY_ID": true, "AWS_SECRET_ACCESS_KEY": true}

// Every variable the manifests set is one qo reads, every command and flag
// in their args is one qo has: a typo fails here, not in a cluster.
func TestEnvAndArgsExistInTheCLI(t *testing.T) {
	o := load(t)
	src := sources(t)
	commands := map[string]bool{}
	for _, m := range regexp.MustCompile(`cli\.Command\{\s*Name:\s*"([^"]+)"`).FindAllStringSubmatch(src, -1) {
		commands[m[1]] = true
	}
	for _, m := range regexp.MustCompile(`Aliases:\s*\[\]string\{([^}]*)\}`).FindAllStringSubmatch(src, -1) {
		for _, a := range strings.Split(m[1], ",") {
			commands[strings.Trim(strings.TrimSpace(a), `"`)] = true
		}
	}
	seen := 0
	for _, d := range o.docs {
		ps, ok := podSpec(d.obj)
		if !ok {
			continue
		}
		for _, c := range ps.Containers {
			for _, e := range c.Env {
				seen++
				switch {
				case sdkEnv[e.Name]:
				case strings.HasPrefix(e.Name, "QO_") || strings.HasPrefix(e.Name, "S3_") || strings.HasPrefix(e.Name, "AWS_"):
					if !strings.Contains(src, `"`+e.Name+`"`) {
						t.Errorf("%s: container %s sets %s, which the qo command does not read", d.file, c.Name, e.Name)
					}
				default:
					t.Errorf("%s: container %s sets %s: not a qo variable", d.file, c.Name, e.Name)
				}
			}
			if d.patch {
				continue
			}
			if len(c.Args) == 0 || !commands[c.Args[0]] {
				t.Errorf("%s: container %s: args %q do not start with a qo command", d.file, c.Name, c.Args)
				continue
			}
			for _, a := range c.Args[1:] {
				if name, ok := strings.CutPrefix(a, "--"); ok {
					name, _, _ = strings.Cut(name, "=")
					if !regexp.MustCompile(`Name:\s*"` + regexp.QuoteMeta(name) + `"`).MatchString(src) {
						t.Errorf("%s: container %s: no flag --%s in qo", d.file, c.Name, name)
					}
				}
			}
		}
	}
	if seen == 0 {
		t.Fatal("no environment variables found: the manifests were not read")
	}
	// The check itself must catch a typo.
	if strings.Contains(src, `"QO_CONCURENCY"`) || !strings.Contains(src, `"QO_CONCURRENCY"`) {
		t.Fatal("the source scan is broken")
	}
}

func envOf(c corev1.Container, name string) (corev1.EnvVar, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e, true
		}
	}
	return corev1.EnvVar{}, false
}

func container(t *testing.T, ps *corev1.PodSpec, name string) corev1.Container {
	t.Helper()
	for _, c := range ps.Containers {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no container %s", name)
	return corev1.Container{}
}

func portOf(t *testing.T, addr string) int32 {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return int32(n)
}

func namedPort(t *testing.T, c corev1.Container, name string) int32 {
	t.Helper()
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	t.Fatalf("container %s has no port %s", c.Name, name)
	return 0
}

// Every pod runs as non-root with a read-only root filesystem and no
// capabilities, and asks for memory.
func TestPodsAreLockedDown(t *testing.T) {
	o := load(t)
	for _, d := range o.docs {
		ps, ok := podSpec(d.obj)
		if !ok || d.patch {
			continue
		}
		if ps.SecurityContext == nil || ps.SecurityContext.RunAsNonRoot == nil || !*ps.SecurityContext.RunAsNonRoot {
			t.Errorf("%s: pod without runAsNonRoot: true", d.file)
		}
		for _, c := range ps.Containers {
			sc := c.SecurityContext
			if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
				sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
				sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
				t.Errorf("%s: container %s: want readOnlyRootFilesystem, no privilege escalation and all capabilities dropped", d.file, c.Name)
			}
			if c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
				t.Errorf("%s: container %s without a memory request and limit", d.file, c.Name)
			}
			if c.Image == "" {
				t.Errorf("%s: container %s without an image", d.file, c.Name)
			}
			for _, e := range c.Env {
				if strings.HasPrefix(e.Name, "AWS_") && e.Name != "AWS_REGION" && (e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil) {
					t.Errorf("%s: container %s: %s must come from a Secret", d.file, c.Name, e.Name)
				}
			}
		}
	}
}

func TestWorker(t *testing.T) {
	o := load(t)
	dep := one[appsv1.Deployment](t, o, "qo-worker")
	ps := &dep.Spec.Template.Spec
	c := container(t, ps, "worker")

	e, ok := envOf(c, "QO_SHUTDOWN_TIMEOUT")
	if !ok {
		t.Fatal("QO_SHUTDOWN_TIMEOUT not set")
	}
	shutdown, err := time.ParseDuration(e.Value)
	if err != nil {
		t.Fatal(err)
	}
	if ps.TerminationGracePeriodSeconds == nil || time.Duration(*ps.TerminationGracePeriodSeconds)*time.Second < shutdown+10*time.Second {
		t.Errorf("terminationGracePeriodSeconds must exceed QO_SHUTDOWN_TIMEOUT %s by at least 10s (release and deregister)", shutdown)
	}

	e, ok = envOf(c, "QO_METRICS_ADDR")
	if !ok {
		t.Fatal("QO_METRICS_ADDR not set")
	}
	if port := portOf(t, e.Value); namedPort(t, c, "metrics") != port {
		t.Errorf("port metrics is not the port of QO_METRICS_ADDR %s", e.Value)
	}
	for probe, path := range map[*corev1.Probe]string{c.LivenessProbe: "/healthz", c.ReadinessProbe: "/readyz"} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != path || probe.HTTPGet.Port.String() != "metrics" {
			t.Errorf("want a probe GET %s on port metrics", path)
		}
	}
	if e, ok := envOf(c, "QO_WORKER_ID"); ok {
		t.Errorf("QO_WORKER_ID=%q: a fixed id would be shared by the restarts of a container", e.Value)
	}
	// The benchmark measured 45 MB RSS at concurrency 32.
	if c.Resources.Requests.Memory().Cmp(resource.MustParse("45M")) < 0 {
		t.Errorf("memory request %s is below the measured 45 MB", c.Resources.Requests.Memory())
	}

	// components/monitor turns the embedded monitor off.
	if e, ok := envOf(c, "QO_NO_MONITOR"); !ok || e.Value != "false" {
		t.Error("the base workers should run the embedded monitor (QO_NO_MONITOR=false)")
	}
	var patched bool
	for _, d := range find[appsv1.Deployment](o, "qo-worker", true) {
		for _, pc := range d.Spec.Template.Spec.Containers {
			if e, ok := envOf(pc, "QO_NO_MONITOR"); ok && e.Value == "true" && pc.Name == "worker" {
				patched = true
			}
		}
	}
	if !patched {
		t.Error("no patch sets QO_NO_MONITOR=true on the worker container")
	}
	mon := one[appsv1.Deployment](t, o, "qo-monitor")
	if mon.Spec.Replicas == nil || *mon.Spec.Replicas != 1 {
		t.Error("the monitor Deployment should run one replica")
	}
	if args := container(t, &mon.Spec.Template.Spec, "monitor").Args; len(args) == 0 || args[0] != "monitor" {
		t.Errorf("monitor args %q", args)
	}
}

func TestServeAndAutoscaling(t *testing.T) {
	o := load(t)
	dep := one[appsv1.Deployment](t, o, "qo-serve")
	c := container(t, &dep.Spec.Template.Spec, "serve")
	addr, ok := envOf(c, "QO_API_ADDR")
	if !ok {
		t.Fatal("QO_API_ADDR not set")
	}
	port := portOf(t, addr.Value)
	if namedPort(t, c, "http") != port {
		t.Errorf("port http is not the port of QO_API_ADDR %s", addr.Value)
	}
	tok, ok := envOf(c, "QO_API_TOKEN")
	if !ok || tok.ValueFrom == nil || tok.ValueFrom.SecretKeyRef == nil || tok.ValueFrom.SecretKeyRef.Optional != nil && *tok.ValueFrom.SecretKeyRef.Optional {
		t.Fatal("QO_API_TOKEN must come from a Secret (qo serve refuses a non-loopback address without a token)")
	}
	svc := one[corev1.Service](t, o, "qo-serve")
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != port || svc.Spec.Ports[0].TargetPort.String() != "http" {
		t.Errorf("Service ports %+v: want %d to the container's http", svc.Spec.Ports, port)
	}
	for k, v := range svc.Spec.Selector {
		if dep.Spec.Template.Labels[k] != v {
			t.Errorf("the Service selects %s=%s, not on the serve pods", k, v)
		}
	}

	so := one[scaledObject](t, o, "qo-worker")
	if so.Spec.ScaleTargetRef.Name != "qo-worker" || so.Spec.MinReplicaCount == nil || *so.Spec.MinReplicaCount != 0 {
		t.Errorf("ScaledObject: want qo-worker scaled from zero, got %+v", so.Spec)
	}
	if len(so.Spec.Triggers) != 1 || so.Spec.Triggers[0].Type != "metrics-api" {
		t.Fatalf("ScaledObject triggers %+v: want one metrics-api", so.Spec.Triggers)
	}
	tr := so.Spec.Triggers[0]
	known := []string{"url", "format", "valueLocation", "targetValue", "activationTargetValue", "authMode", "method", "unsafeSsl"}
	for k := range tr.Metadata {
		if !slices.Contains(known, k) {
			t.Errorf("metrics-api trigger: unexpected metadata %q", k)
		}
	}
	for _, k := range []string{"targetValue", "activationTargetValue"} {
		if _, err := strconv.ParseFloat(tr.Metadata[k], 64); err != nil {
			t.Errorf("metrics-api %s: %v", k, err)
		}
	}
	u, err := url.Parse(tr.Metadata["url"])
	if err != nil {
		t.Fatal(err)
	}
	ns := readKustomization(t, ".").Namespace
	if want := fmt.Sprintf("%s.%s.svc.cluster.local:%d", svc.Name, ns, port); u.Host != want || u.Path != "/api/stats" {
		t.Errorf("metrics-api url %s: want http://%s/api/stats (KEDA runs in another namespace)", u, want)
	}
	// valueLocation names a number in the JSON of GET /api/stats.
	b, err := json.Marshal(view.StatsOf(queue.Stats{ByStatus: map[queue.Status]int{queue.StatusPending: 7}}, nil))
	if err != nil {
		t.Fatal(err)
	}
	var stats any
	if err := json.Unmarshal(b, &stats); err != nil {
		t.Fatal(err)
	}
	v := stats
	for _, step := range strings.Split(tr.Metadata["valueLocation"], ".") {
		m, _ := v.(map[string]any)
		v = m[step]
	}
	if v != 7.0 {
		t.Errorf("valueLocation %q finds %v in %s, want the pending count", tr.Metadata["valueLocation"], v, b)
	}
	if tr.Metadata["authMode"] != "bearer" || tr.AuthenticationRef == nil {
		t.Fatal("the metrics-api trigger must send the bearer token")
	}
	ta := one[triggerAuthentication](t, o, tr.AuthenticationRef.Name)
	if len(ta.Spec.SecretTargetRef) != 1 || ta.Spec.SecretTargetRef[0].Parameter != "token" ||
		ta.Spec.SecretTargetRef[0].Name != tok.ValueFrom.SecretKeyRef.Name || ta.Spec.SecretTargetRef[0].Key != tok.ValueFrom.SecretKeyRef.Key {
		t.Errorf("TriggerAuthentication %+v: want parameter token from the Secret of QO_API_TOKEN", ta.Spec)
	}

	hpa := one[autoscalingv2.HorizontalPodAutoscaler](t, o, "qo-worker")
	if hpa.Spec.ScaleTargetRef.Kind != "Deployment" || hpa.Spec.ScaleTargetRef.Name != "qo-worker" {
		t.Errorf("HPA targets %+v", hpa.Spec.ScaleTargetRef)
	}
	if len(hpa.Spec.Metrics) != 1 || hpa.Spec.Metrics[0].External == nil {
		t.Fatalf("HPA metrics %+v: want one external metric", hpa.Spec.Metrics)
	}
	ext := hpa.Spec.Metrics[0].External.Metric
	var labels map[string]string
	if ext.Selector != nil {
		labels = ext.Selector.MatchLabels
	}
	if !backlogSeries(t, ext.Name, labels) {
		t.Errorf("HPA external metric %s with labels %v: qo serve exports no such series", ext.Name, labels)
	}
}

// backlogSeries reports whether the backlog gauges of qo serve's /metrics,
// given a count for every counted status, include a series of family name
// with labels.
func backlogSeries(t *testing.T, name string, labels map[string]string) bool {
	t.Helper()
	m := metrics.New()
	m.WatchBacklog(func(context.Context) (metrics.Backlog, error) {
		b := metrics.Backlog{Tasks: map[string]int{}}
		for _, s := range queue.CountedStatuses {
			b.Tasks[string(s)] = 1
		}
		return b, nil
	}, 0)
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, series := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range series.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			match := true
			for k, v := range labels {
				match = match && have[k] == v
			}
			if match {
				return true
			}
		}
	}
	return false
}

// Every Secret and ConfigMap key a pod reads is in the examples.
func TestSecretKeys(t *testing.T) {
	o := load(t)
	have := map[string]bool{}
	for _, d := range o.docs {
		switch s := d.obj.(type) {
		case *corev1.Secret:
			for k := range s.StringData {
				have[s.Name+"/"+k] = true
			}
		case *corev1.ConfigMap:
			for k := range s.Data {
				have["configmap "+s.Name+"/"+k] = true
			}
		}
	}
	for _, d := range o.docs {
		ps, ok := podSpec(d.obj)
		if !ok {
			continue
		}
		for _, c := range ps.Containers {
			for _, e := range c.Env {
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
					ref := e.ValueFrom.SecretKeyRef
					if !have[ref.Name+"/"+ref.Key] && (ref.Optional == nil || !*ref.Optional) {
						t.Errorf("%s: %s reads %s/%s, missing from the example Secrets", d.file, e.Name, ref.Name, ref.Key)
					}
				}
				if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
					ref := e.ValueFrom.ConfigMapKeyRef
					if !have["configmap "+ref.Name+"/"+ref.Key] && (ref.Optional == nil || !*ref.Optional) {
						t.Errorf("%s: %s reads ConfigMap %s/%s, missing from the example", d.file, e.Name, ref.Name, ref.Key)
					}
				}
			}
		}
	}
}

func readKustomization(t *testing.T, dir string) kustomization {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k kustomization
	if err := strict(b, &k); err != nil {
		t.Fatal(err)
	}
	return k
}

// With kubectl at hand (it builds kustomizations offline), the top-level
// kustomization builds with every component, and the component patch lands.
func TestKubectlKustomize(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl not found")
	}
	for _, comps := range [][]string{nil, {"example-secrets", "monitor", "keda"}, {"example-secrets", "hpa"}} {
		built := kustomize(t, kubectl, comps)
		if slices.Contains(comps, "monitor") && !regexp.MustCompile(`name: QO_NO_MONITOR\s+value: "true"`).MatchString(built) {
			t.Errorf("with components/monitor the workers still run the embedded monitor:\n%s", built)
		}
		if n := strings.Count(built, "\n  namespace: qo\n"); n < 5 {
			t.Errorf("with %v: %d objects in namespace qo", comps, n)
		}
	}
}

// kustomize builds the top-level kustomization with the given components
// enabled, with kubectl (which builds kustomizations offline).
func kustomize(t *testing.T, kubectl string, comps []string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(root)); err != nil {
		t.Fatal(err)
	}
	top := filepath.Join(dir, "kustomization.yaml")
	b, err := os.ReadFile(top)
	if err != nil {
		t.Fatal(err)
	}
	if len(comps) > 0 {
		b = append(b, "components:\n"...)
		for _, c := range comps {
			b = append(b, "  - components/"+c+"\n"...)
		}
		if err := os.WriteFile(top, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command(kubectl, "kustomize", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl kustomize with %v: %v\n%s", comps, err, out)
	}
	return string(out)
}
