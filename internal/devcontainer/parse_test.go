package devcontainer

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseTakesWhatASandboxCanUse(t *testing.T) {
	data := `// a comment
{
	/* block comment */
	"name": "demo",
	"build": {
		"dockerfile": "Dockerfile",
		"context": "..",
		"args": {"GO_VERSION": "1.26",},
		"target": "dev",
	},
	"containerEnv": {"GOFLAGS": "-mod=mod", "WS": "${containerWorkspaceFolder}/bin", "TOKEN": "${localEnv:GITHUB_TOKEN}"},
	"onCreateCommand": "go mod download",
	"updateContentCommand": ["npm", "ci", "--prefix", "it's web"],
	"postCreateCommand": {"b": "make tools", "a": ["pip", "install", "-e", "."]},
	"postStartCommand": "echo every start",
	"runArgs": ["--privileged"],
	"privileged": true,
	"capAdd": ["SYS_ADMIN"],
	"init": false,
	"mounts": ["source=/,target=/host,type=bind"],
	"remoteUser": "root",
	"customizations": {"vscode": {}},
	"frobnicate": 1,
}`
	c, err := Parse(".devcontainer/devcontainer.json", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	wantBuild := &Build{Dockerfile: ".devcontainer/Dockerfile", Context: ".", Args: map[string]string{"GO_VERSION": "1.26"}, Target: "dev"}
	if !reflect.DeepEqual(c.Build, wantBuild) {
		t.Errorf("Build = %+v, want %+v", c.Build, wantBuild)
	}
	wantEnv := map[string]string{"GOFLAGS": "-mod=mod", "WS": "/workspace/bin"}
	if !reflect.DeepEqual(c.ContainerEnv, wantEnv) {
		t.Errorf("ContainerEnv = %v, want %v (the host's variable must not be taken)", c.ContainerEnv, wantEnv)
	}
	wantSetup := []string{"go mod download", `'npm' 'ci' '--prefix' 'it'\''s web'`, `'pip' 'install' '-e' '.'`, "make tools"}
	if !reflect.DeepEqual(c.Setup, wantSetup) {
		t.Errorf("Setup = %q, want %q", c.Setup, wantSetup)
	}
	var got []string
	for _, i := range c.Ignored {
		sec := ""
		if i.Security {
			sec = "!"
		}
		got = append(got, sec+i.Key)
	}
	want := []string{"containerEnv.TOKEN", "postStartCommand", "!runArgs", "!privileged", "!capAdd", "!mounts", "!remoteUser", "frobnicate"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Ignored = %q, want %q (init: false changes nothing)", got, want)
	}
}

func TestParseRefusesBadInput(t *testing.T) {
	for _, tc := range []struct{ name, data, want string }{
		{"not an object", `[1]`, "want a JSON object"},
		{"syntax", `{"image": }`, "devcontainer.json"},
		{"nothing to start from", `{"name": "x"}`, "neither image nor build.dockerfile"},
		{"both", `{"image": "a", "build": {"dockerfile": "D"}}`, "both image and build.dockerfile"},
		{"dockerfile out of the repository", `{"build": {"dockerfile": "../../etc/passwd"}}`, "leaves the repository"},
		{"absolute dockerfile", `{"build": {"dockerfile": "/etc/passwd"}}`, "not an absolute one"},
		{"context out of the repository", `{"build": {"dockerfile": "D", "context": "../.."}}`, "leaves the repository"},
		{"dockerfile outside context", `{"build": {"dockerfile": "D", "context": "sub"}}`, "outside build.context"},
		{"compose", `{"dockerComposeFile": "c.yml", "service": "app"}`, "Docker Compose"},
		{"lifecycle number", `{"image": "a", "onCreateCommand": 3}`, "onCreateCommand: want a string"},
		{"lifecycle object of numbers", `{"image": "a", "postCreateCommand": {"x": 3}}`, `postCreateCommand: "x"`},
		{"env name", `{"image": "a", "containerEnv": {"A=B": "c"}}`, "variable name"},
		{"duplicate", `{"image": "a", "image": "b"}`, "given twice"},
		{"build without a Dockerfile", `{"build": {"args": {"A": "b"}}}`, "neither image nor build.dockerfile"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(".devcontainer/devcontainer.json", []byte(tc.data))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse(%s) = %v, want an error containing %q", tc.data, err, tc.want)
			}
		})
	}
}

func TestParseBoundsItsInput(t *testing.T) {
	big := `{"image": "a", "name": "` + strings.Repeat("x", MaxSize) + `"}`
	if _, err := Parse(".devcontainer.json", []byte(big)); err == nil || !strings.Contains(err.Error(), "over") {
		t.Errorf("Parse of %d bytes = %v, want a size error", len(big), err)
	}
	deep := `{"image": "a", "name": ` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + `}`
	if _, err := Parse(".devcontainer.json", []byte(deep)); err != nil {
		t.Logf("deeply nested input: %v", err) // refused or taken, but no crash
	}
}

func TestLoadFindsTheFileAndStaysInTheRepository(t *testing.T) {
	root := t.TempDir()
	if _, err := Load(root); err != ErrNotFound {
		t.Errorf("Load of a repository without one = %v, want ErrNotFound", err)
	}
	os.WriteFile(filepath.Join(root, ".devcontainer.json"), []byte(`{"image": "top"}`), 0o644)
	os.Mkdir(filepath.Join(root, ".devcontainer"), 0o755)
	os.WriteFile(filepath.Join(root, ".devcontainer", "devcontainer.json"), []byte(`{"image": "inner"}`), 0o644)
	c, err := Load(root)
	if err != nil || c.Image != "inner" || c.Path != ".devcontainer/devcontainer.json" {
		t.Fatalf("Load = %+v, %v; want the one in .devcontainer/ first", c, err)
	}

	// A symlink out of the repository is not followed.
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret.json"), []byte(`{"image": "from-outside"}`), 0o644)
	os.Remove(filepath.Join(root, ".devcontainer", "devcontainer.json"))
	if err := os.Symlink(filepath.Join(outside, "secret.json"), filepath.Join(root, ".devcontainer", "devcontainer.json")); err != nil {
		t.Fatal(err)
	}
	if c, err := Load(root); err == nil {
		t.Errorf("Load through a symlink out of the repository = %+v, want an error", c)
	}
	if err := CheckInRepo(root, ".devcontainer/devcontainer.json"); err == nil {
		t.Error("CheckInRepo accepted a symlink out of the repository")
	}
	if err := CheckInRepo(root, "nope/Dockerfile"); err == nil || !strings.Contains(err.Error(), "nope/Dockerfile does not exist") {
		t.Errorf("CheckInRepo of a missing file = %v, want an error naming it", err)
	}
}

func TestParseImageWithBuildArgsOnly(t *testing.T) {
	c, err := Parse(".devcontainer.json", []byte(`{"image": "python:3.12", "build": {"args": {"A": "b"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Image != "python:3.12" || c.Build != nil || len(c.Ignored) != 1 || c.Ignored[0].Key != "build" {
		t.Errorf("Parse = %+v; want the image, and build reported as not obeyed", c)
	}
}
