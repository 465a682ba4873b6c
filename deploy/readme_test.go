package deploy

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// goreleaser is the part of .goreleaser.yaml the README's install section
// describes.
type goreleaser struct {
	ProjectName string `json:"project_name"`
	Builds      []struct {
		ID     string   `json:"id"`
		Goos   []string `json:"goos"`
		Goarch []string `json:"goarch"`
	} `json:"builds"`
	Archives []struct {
		IDs             []string `json:"ids"`
		Formats         []string `json:"formats"`
		NameTemplate    string   `json:"name_template"`
		FormatOverrides []struct {
			Goos    string   `json:"goos"`
			Formats []string `json:"formats"`
		} `json:"format_overrides"`
		Files []string `json:"files"`
	} `json:"archives"`
	Checksum struct {
		NameTemplate string `json:"name_template"`
		Algorithm    string `json:"algorithm"`
	} `json:"checksum"`
	Sboms []struct {
		ID        string   `json:"id"`
		Cmd       string   `json:"cmd"`
		Artifacts string   `json:"artifacts"`
		IDs       []string `json:"ids"`
		Documents []string `json:"documents"`
	} `json:"sboms"`
	Signs []struct {
		Cmd       string   `json:"cmd"`
		Artifacts string   `json:"artifacts"`
		Signature string   `json:"signature"`
		Args      []string `json:"args"`
	} `json:"signs"`
	Release struct {
		GitHub struct {
			Owner string `json:"owner"`
			Name  string `json:"name"`
		} `json:"github"`
	} `json:"release"`
}

// TestREADMEInstall: the README's install section names what a release
// really carries (.goreleaser.yaml: the archives' names, formats and
// platforms, the checksum file and its algorithm, where releases are), the
// module path go install needs (go.mod, with its Go version) and the image
// the manifests run, so neither can change without the other.
func TestREADMEInstall(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../.goreleaser.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var rel goreleaser
	if err := yaml.Unmarshal(raw, &rel); err != nil {
		t.Fatalf(".goreleaser.yaml: %v", err)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, install, ok := strings.Cut(string(readme), "\n## Install\n")
	if !ok {
		t.Fatal("README.md has no '## Install' section")
	}
	install, _, _ = strings.Cut(install, "\n## ")

	var want []string
	if len(rel.Archives) != 1 {
		t.Fatalf(".goreleaser.yaml has %d archives; the README describes one", len(rel.Archives))
	}
	a := rel.Archives[0]
	name := strings.NewReplacer("{{ .ProjectName }}", rel.ProjectName, "{{ .Version }}", "VERSION",
		"{{ .Os }}", "OS", "{{ .Arch }}", "ARCH").Replace(a.NameTemplate)
	for _, f := range a.Formats {
		want = append(want, "`"+name+"."+f+"`")
	}
	for _, o := range a.FormatOverrides {
		for _, f := range o.Formats {
			want = append(want, "`."+f+"` for "+o.Goos)
		}
	}
	for _, f := range a.Files {
		want = append(want, strings.TrimSuffix(f, "*"))
	}
	for _, b := range rel.Builds {
		if len(a.IDs) > 0 && !slices.Contains(a.IDs, b.ID) {
			continue
		}
		want = append(append(want, b.Goos...), b.Goarch...)
	}
	want = append(want, "`"+rel.Checksum.NameTemplate+"`", strings.ToUpper(strings.Replace(rel.Checksum.Algorithm, "sha", "SHA-", 1)),
		fmt.Sprintf("https://github.com/%s/%s/releases", rel.Release.GitHub.Owner, rel.Release.GitHub.Name))

	mod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^module (\S+)$`).FindSubmatch(mod)
	g := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(mod)
	if m == nil || g == nil {
		t.Fatal("go.mod: no module or go line")
	}
	want = append(want, "go install "+string(m[1])+"@latest", fmt.Sprintf("Go** (%s or later)", g[1]))

	manifest, err := os.ReadFile(root + "/base/worker-deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	image := regexp.MustCompile(`image: (\S+):latest`).FindStringSubmatch(string(manifest))
	if image == nil {
		t.Fatal("worker-deployment.yaml: no image")
	}
	want = append(want, "`"+image[1]+":VERSION`")

	// Verifying: the SBOMs and the signature the release makes, and the
	// cosign command that checks the signature.
	for _, sb := range rel.Sboms {
		if sb.Artifacts != "binary" || len(sb.Documents) != 1 {
			t.Errorf("sbom %s: want one document per binary", sb.ID)
			continue
		}
		doc := strings.NewReplacer("{{ .ProjectName }}", rel.ProjectName, "{{ .Version }}", "VERSION",
			"{{ .Os }}", "OS", "{{ .Arch }}", "ARCH").Replace(sb.Documents[0])
		if slices.Contains(sb.IDs, "qo-image") {
			doc = strings.Replace(doc, "_OS_", "_linux_", 1)
		}
		want = append(want, "`"+doc+"`")
	}
	if len(rel.Sboms) != 2 {
		t.Errorf(".goreleaser.yaml has %d SBOMs, want the archives' and the image's", len(rel.Sboms))
	}
	if len(rel.Signs) != 1 || rel.Signs[0].Cmd != "cosign" || rel.Signs[0].Artifacts != "checksum" ||
		!slices.Contains(rel.Signs[0].Args, "--bundle=${signature}") || !slices.Contains(rel.Signs[0].Args, "sign-blob") {
		t.Errorf(".goreleaser.yaml signs %+v: want cosign sign-blob of the checksums into a bundle", rel.Signs)
	} else {
		sig := strings.ReplaceAll(rel.Signs[0].Signature, "${artifact}", rel.Checksum.NameTemplate)
		want = append(want, "`"+sig+"`", "cosign verify-blob --bundle "+sig,
			fmt.Sprintf(`^https://github\.com/%s/%s/`, rel.Release.GitHub.Owner, rel.Release.GitHub.Name))
	}

	for _, w := range want {
		if !strings.Contains(install, w) {
			t.Errorf("README.md's install section does not say %q", w)
		}
	}
}

// TestReleaseWorkflowSigns: the identity the README's cosign command
// checks (a workflow of the repository, run on a tag v*) is a workflow that
// exists, runs on tags v*, may mint the OIDC token keyless signing needs,
// and publishes through scripts/release.sh release (goreleaser's signs).
func TestReleaseWorkflowSigns(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`--certificate-identity-regexp '\^https://github\\\.com/([^/]+)/([^/]+)/\\\.github/workflows/`)
	m := re.FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md: no cosign --certificate-identity-regexp naming a workflow of the repository")
	}
	raw, err := os.ReadFile("../.github/workflows/release.yml")
	if err != nil {
		t.Fatalf("the README's signing identity is a release workflow: %v", err)
	}
	var wf struct {
		On struct {
			Push struct {
				Tags []string `yaml:"tags"`
			} `yaml:"push"`
		} `yaml:"on"`
		Permissions map[string]string `yaml:"permissions"`
		Jobs        map[string]struct {
			Steps []struct {
				Uses string `yaml:"uses"`
				Run  string `yaml:"run"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(raw, &wf); err != nil {
		t.Fatalf("release.yml: %v", err)
	}
	if !slices.Contains(wf.On.Push.Tags, "v*") {
		t.Errorf("release.yml runs on tags %v; the README's identity is a tag v*", wf.On.Push.Tags)
	}
	if wf.Permissions["id-token"] != "write" {
		t.Error("release.yml: keyless signing needs permissions id-token: write")
	}
	var cosign, release bool
	for _, j := range wf.Jobs {
		for _, s := range j.Steps {
			cosign = cosign || strings.HasPrefix(s.Uses, "sigstore/cosign-installer@")
			release = release || strings.Contains(s.Run, "scripts/release.sh release")
		}
	}
	if !cosign || !release {
		t.Errorf("release.yml: want cosign installed (%v) and scripts/release.sh release run (%v)", cosign, release)
	}
	script, err := os.ReadFile("../scripts/release.sh")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^release\)$`).Match(script) {
		t.Error("scripts/release.sh has no release subcommand")
	}
}
