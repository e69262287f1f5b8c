package deploycheck

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"text/template"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/config"
)

const root = "../.."

// configVars is every environment variable the configuration reads: the
// names config.Load asks getenv for.
var configVars = sync.OnceValue(func() map[string]bool {
	names := map[string]bool{}
	var mu sync.Mutex
	config.Load(nil, func(name string) string {
		mu.Lock()
		names[name] = true
		mu.Unlock()
		return ""
	})
	return names
})

func TestConfigVarsAreFound(t *testing.T) {
	// The recorder itself: a name the config does not read is absent.
	for _, name := range []string{"PORT", "LISTEN_ADDR", "SQL_DSN", "SESSION_SECRET", "SHUTDOWN_DELAY", "METRICS_TOKEN"} {
		if !configVars()[name] {
			t.Errorf("config.Load does not read %s", name)
		}
	}
	if configVars()["NOT_A_MODELGATE_VARIABLE"] {
		t.Error("the recorder reports a variable nobody reads")
	}
}

// renderChart renders every template of the chart with its values.yaml
// overlaid by overrides, the way helm template does for the functions the
// chart uses (a subset of helm's: list, quote, default, int, toYaml,
// nindent, fail). It returns the documents by kind.
func renderChart(t *testing.T, overrides map[string]any) (map[string]map[string]any, error) {
	t.Helper()
	dir := filepath.Join(root, "deploy/helm/modelgate")
	var chart map[string]any
	readYAML(t, filepath.Join(dir, "Chart.yaml"), &chart)
	var values map[string]any
	readYAML(t, filepath.Join(dir, "values.yaml"), &values)
	merge(values, overrides)
	data := map[string]any{
		"Values":  values,
		"Release": map[string]any{"Name": "mg", "Namespace": "default", "Service": "Helm"},
		"Chart":   map[string]any{"Name": chart["name"], "Version": chart["version"], "AppVersion": chart["appVersion"]},
	}
	funcs := template.FuncMap{
		"list":  func(v ...any) []any { return v },
		"quote": func(v any) string { return strconv.Quote(fmt.Sprint(v)) },
		"default": func(def, v any) any {
			if v == nil || v == "" || v == false || v == 0 {
				return def
			}
			return v
		},
		"int": func(v any) (int, error) {
			switch n := v.(type) {
			case int:
				return n, nil
			case float64:
				return int(n), nil
			}
			return 0, fmt.Errorf("int: %v is not a number", v)
		},
		"toYaml": func(v any) (string, error) {
			b, err := yaml.Marshal(v)
			return strings.TrimSuffix(string(b), "\n"), err
		},
		"nindent": func(n int, s string) string {
			pad := strings.Repeat(" ", n)
			return "\n" + pad + strings.ReplaceAll(s, "\n", "\n"+pad)
		},
		"fail": func(msg string) (string, error) { return "", errors.New(msg) },
	}
	files, err := filepath.Glob(filepath.Join(dir, "templates/*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no templates: %v", err)
	}
	docs := map[string]map[string]any{}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		tmpl, err := template.New(filepath.Base(f)).Option("missingkey=error").Funcs(funcs).Parse(string(src))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		var out bytes.Buffer
		if err := tmpl.Execute(&out, data); err != nil {
			return nil, err
		}
		dec := yaml.NewDecoder(&out)
		for {
			var doc map[string]any
			if err := dec.Decode(&doc); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("%s renders invalid YAML: %v\n%s", f, err, out.String())
			}
			if doc == nil {
				continue
			}
			kind, _ := doc["kind"].(string)
			if kind == "" || docs[kind] != nil {
				t.Fatalf("%s: document without a kind, or a second %q", f, kind)
			}
			docs[kind] = doc
		}
	}
	return docs, nil
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// merge sets src's leaves into dst, recursively.
func merge(dst, src map[string]any) {
	for k, v := range src {
		if sub, ok := v.(map[string]any); ok {
			if d, ok := dst[k].(map[string]any); ok {
				merge(d, sub)
				continue
			}
		}
		dst[k] = v
	}
}

// get walks a decoded YAML document: string keys for maps, ints for lists.
func get(t *testing.T, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("%v: not a map at %q", path, k)
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				t.Fatalf("%v: no item %d", path, k)
			}
			v = l[k]
		}
	}
	return v
}

var fleetValues = map[string]any{"secrets": map[string]any{
	"sessionSecret":       "a-session-secret-of-32-characters",
	"rootAccessToken":     "a-root-access-token-0123456789",
	"initialRootPassword": "a-root-password",
	"metricsToken":        "a-metrics-token-0123456789",
	"databaseURL":         "postgres://modelgate:pw@postgres:5432/modelgate",
	"redisURL":            "redis://redis:6379/0",
}, "serviceMonitor": map[string]any{"enabled": true}, "persistence": map[string]any{"enabled": true},
	"extraEnv": map[string]any{"CONFIG_POLL_INTERVAL": "5s"}}

func TestChartRendersAValidDeployment(t *testing.T) {
	docs, err := renderChart(t, fleetValues)
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"Deployment", "Service", "Secret", "ServiceMonitor", "PersistentVolumeClaim"} {
		if docs[kind] == nil {
			t.Errorf("no %s rendered", kind)
		}
	}
	dep := docs["Deployment"]
	pod := get(t, dep, "spec", "template", "spec")
	c := get(t, pod, "containers", 0)

	// Every variable set is one the configuration reads; the secret ones
	// come from keys the Secret has.
	secretData := get(t, docs["Secret"], "stringData").(map[string]any)
	env := map[string]string{}
	for _, e := range get(t, c, "env").([]any) {
		name := get(t, e, "name").(string)
		if !configVars()[name] {
			t.Errorf("the chart sets %s, which the configuration does not read", name)
		}
		if v, ok := e.(map[string]any)["value"]; ok {
			env[name] = fmt.Sprint(v)
			continue
		}
		ref := get(t, e, "valueFrom", "secretKeyRef")
		if get(t, ref, "name") != get(t, docs["Secret"], "metadata", "name") || get(t, ref, "key") != name {
			t.Errorf("%s comes from %v, not from the chart's Secret key %s", name, ref, name)
		}
		if _, ok := secretData[name]; !ok {
			t.Errorf("%s: the Secret has no such key with every secret value set", name)
		}
	}
	for _, k := range []string{"SESSION_SECRET", "ROOT_ACCESS_TOKEN", "SQL_DSN", "REDIS_CONN_STRING", "METRICS_TOKEN"} {
		if _, ok := secretData[k]; !ok {
			t.Errorf("the Secret lacks %s", k)
		}
	}
	if env["CONFIG_POLL_INTERVAL"] != "5s" {
		t.Errorf("extraEnv was not passed: %v", env)
	}

	// The configuration the pod gets is valid (secrets as given).
	getenv := func(name string) string {
		if v, ok := env[name]; ok {
			return v
		}
		if v, ok := secretData[name]; ok {
			return fmt.Sprint(v)
		}
		return ""
	}
	cfg, err := config.Load(nil, getenv)
	if err != nil {
		t.Fatalf("the chart's environment does not load: %v", err)
	}
	port := get(t, c, "ports", 0, "containerPort").(int)
	if cfg.ListenPort() != port || get(t, c, "ports", 0, "name") != "http" {
		t.Errorf("the gateway listens on %d (%s), the container port is %d", cfg.ListenPort(), cfg.Addr(), port)
	}

	// Probes: readiness on /readyz, liveness and startup on /healthz, all
	// on the container's port; each a route the gateway serves.
	for probe, want := range map[string]string{"readinessProbe": "/readyz", "livenessProbe": "/healthz", "startupProbe": "/healthz"} {
		if got := get(t, c, probe, "httpGet", "path"); got != want {
			t.Errorf("%s path %v, want %s", probe, got, want)
		}
		if got := get(t, c, probe, "httpGet", "port"); got != "http" {
			t.Errorf("%s port %v, want the container's http port", probe, got)
		}
	}
	servedRoutes(t, "/readyz", "/healthz")

	// A stop keeps serving for SHUTDOWN_DELAY, then drains for
	// SHUTDOWN_TIMEOUT; the grace period covers both and 15 s more.
	if cfg.ShutdownDelay <= 0 {
		t.Errorf("SHUTDOWN_DELAY %v: the chart should give balancers time", cfg.ShutdownDelay)
	}
	grace := time.Duration(get(t, pod, "terminationGracePeriodSeconds").(int)) * time.Second
	if need := cfg.ShutdownDelay + cfg.ShutdownTimeout + 15*time.Second; grace < need {
		t.Errorf("terminationGracePeriodSeconds %v < SHUTDOWN_DELAY + SHUTDOWN_TIMEOUT + 15 s = %v", grace, need)
	}
	if get(t, pod, "securityContext", "runAsNonRoot") != true || get(t, pod, "securityContext", "runAsUser") == 0 {
		t.Error("the pod may run as root")
	}
	if get(t, c, "volumeMounts", 0, "mountPath") != cfg.DataDir {
		t.Errorf("the data volume is not mounted at DATA_DIR %s", cfg.DataDir)
	}

	// The Service reaches the named port; the ServiceMonitor scrapes
	// /metrics there with the token.
	if got := get(t, docs["Service"], "spec", "ports", 0, "targetPort"); got != "http" {
		t.Errorf("Service targetPort %v", got)
	}
	ep := get(t, docs["ServiceMonitor"], "spec", "endpoints", 0)
	if get(t, ep, "path") != "/metrics" || get(t, ep, "port") != "http" || get(t, ep, "bearerTokenSecret", "key") != "METRICS_TOKEN" {
		t.Errorf("ServiceMonitor endpoint %v", ep)
	}
	sel := get(t, docs["ServiceMonitor"], "spec", "selector", "matchLabels")
	if fmt.Sprint(sel) != fmt.Sprint(get(t, docs["Service"], "metadata", "labels")) {
		t.Errorf("ServiceMonitor selects %v, the Service is labelled %v", sel, get(t, docs["Service"], "metadata", "labels"))
	}
	servedRoutes(t, "/metrics")
}

func TestChartRefusesAFleetWithoutADatabaseOrSecret(t *testing.T) {
	if _, err := renderChart(t, nil); err == nil || !strings.Contains(err.Error(), "databaseURL") {
		t.Errorf("two replicas on SQLite rendered: %v", err)
	}
	_, err := renderChart(t, map[string]any{"secrets": map[string]any{"databaseURL": "postgres://db/modelgate"}})
	if err == nil || !strings.Contains(err.Error(), "sessionSecret") {
		t.Errorf("two replicas without a session secret rendered: %v", err)
	}
	// One replica on SQLite with defaults renders, without the optional
	// objects.
	docs, err := renderChart(t, map[string]any{"replicaCount": 1})
	if err != nil {
		t.Fatal(err)
	}
	if docs["ServiceMonitor"] != nil || docs["PersistentVolumeClaim"] != nil {
		t.Error("optional objects rendered while disabled")
	}
	if data := docs["Secret"]["stringData"]; data != nil {
		t.Errorf("empty secret values rendered: %v", data)
	}
	// An existing Secret replaces the chart's.
	docs, err = renderChart(t, map[string]any{"secrets": map[string]any{"existingSecret": "mine"}})
	if err != nil {
		t.Fatal(err)
	}
	if docs["Secret"] != nil {
		t.Error("the chart made a Secret although existingSecret is set")
	}
	ref := get(t, docs["Deployment"], "spec", "template", "spec", "containers", 0, "env")
	for _, e := range ref.([]any) {
		if r, ok := e.(map[string]any)["valueFrom"]; ok && get(t, r, "secretKeyRef", "name") != "mine" {
			t.Errorf("%v does not read the existing Secret", e)
		}
	}
}

// servedRoutes checks that a running gateway answers 200 on each path
// (GET; /metrics with its token).
func servedRoutes(t *testing.T, paths ...string) {
	t.Helper()
	const token = "deploycheck-metrics-token"
	env := apptest.New(t, "METRICS_TOKEN", token)
	for _, p := range paths {
		req, _ := http.NewRequest(http.MethodGet, env.URL()+p, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s answered %d: not a route the gateway serves", p, resp.StatusCode)
		}
	}
}

func TestComposeFile(t *testing.T) {
	var compose struct {
		Services map[string]struct {
			Build       any            `yaml:"build"`
			Image       string         `yaml:"image"`
			Environment map[string]any `yaml:"environment"`
			Ports       []string       `yaml:"ports"`
			Volumes     []string       `yaml:"volumes"`
			Healthcheck struct {
				Test []string `yaml:"test"`
			} `yaml:"healthcheck"`
			DependsOn map[string]struct {
				Condition string `yaml:"condition"`
			} `yaml:"depends_on"`
		} `yaml:"services"`
	}
	readYAML(t, filepath.Join(root, "deploy/compose.yaml"), &compose)
	mg, ok := compose.Services["modelgate"]
	if !ok {
		t.Fatal("no modelgate service")
	}
	for _, s := range []string{"postgres", "redis"} {
		if _, ok := compose.Services[s]; !ok {
			t.Errorf("no %s service", s)
		}
		if mg.DependsOn[s].Condition != "service_healthy" {
			t.Errorf("modelgate does not wait for a healthy %s", s)
		}
		if len(compose.Services[s].Healthcheck.Test) == 0 {
			t.Errorf("%s has no health check", s)
		}
	}
	// Variables: each read by the configuration, and with the ${…}
	// substitutions filled as an operator would, a valid configuration
	// that uses the compose services.
	env := map[string]string{}
	subst := regexp.MustCompile(`\$\{(\w+)(:?[-?])([^}]*)\}`)
	for name, v := range mg.Environment {
		if !configVars()[name] {
			t.Errorf("compose sets %s, which the configuration does not read", name)
		}
		env[name] = subst.ReplaceAllStringFunc(fmt.Sprint(v), func(m string) string {
			parts := subst.FindStringSubmatch(m)
			if parts[2] == ":-" {
				return parts[3]
			}
			return "set-by-the-operator-" + strings.ToLower(parts[1])
		})
	}
	cfg, err := config.Load(nil, func(name string) string { return env[name] })
	if err != nil {
		t.Fatalf("compose's environment does not load: %v", err)
	}
	if !strings.Contains(cfg.SQLDSN, "@postgres:5432/") || !strings.Contains(cfg.RedisConnString, "//redis:6379") {
		t.Errorf("SQL_DSN %q or REDIS_CONN_STRING %q does not name the compose services", cfg.SQLDSN, cfg.RedisConnString)
	}
	if cfg.SessionSecretGenerated {
		t.Error("compose leaves SESSION_SECRET to a random one per start")
	}
	if !slices.Contains(mg.Ports, fmt.Sprintf("127.0.0.1:%d:%d", cfg.ListenPort(), cfg.ListenPort())) {
		t.Errorf("ports %v do not publish the listen port %d on localhost", mg.Ports, cfg.ListenPort())
	}
	if !slices.Contains(mg.Volumes, "modelgate-data:"+dockerfile(t).volume) {
		t.Errorf("volumes %v do not mount the image's volume", mg.Volumes)
	}
	if got := strings.Join(mg.Healthcheck.Test, " "); got != "CMD /modelgate healthcheck" {
		t.Errorf("health check %q", got)
	}
	if mg.Build == nil {
		t.Error("the modelgate service does not build the Dockerfile")
	}
}

// image is what the Dockerfile's final stage, or build-image.sh, says.
type image struct {
	entrypoint, user, expose, volume, workdir, env, healthcheck string
	healthOptions                                               map[string]string
}

func dockerfile(t *testing.T) image {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var img image
	stages := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		word, rest, _ := strings.Cut(line, " ")
		switch strings.ToUpper(word) {
		case "FROM":
			stages++
			img = image{} // the final stage counts
			if !strings.HasPrefix(rest, "scratch") && stages > 1 {
				t.Errorf("final stage from %q, not scratch", rest)
			}
		case "ENTRYPOINT":
			img.entrypoint = rest
		case "USER":
			img.user = rest
		case "EXPOSE":
			img.expose = rest
		case "VOLUME":
			var v []string
			if err := json.Unmarshal([]byte(rest), &v); err != nil || len(v) != 1 {
				t.Fatalf("VOLUME %s: want one path as JSON", rest)
			}
			img.volume = v[0]
		case "WORKDIR":
			img.workdir = rest
		case "ENV":
			img.env = rest
		case "HEALTHCHECK":
			img.healthOptions = map[string]string{}
			for strings.HasPrefix(rest, "--") {
				var opt string
				opt, rest, _ = strings.Cut(rest, " ")
				k, v, _ := strings.Cut(strings.TrimPrefix(opt, "--"), "=")
				img.healthOptions[k] = v
			}
			img.healthcheck = rest
		}
	}
	if stages < 2 {
		t.Errorf("the Dockerfile has %d stages; want a build stage and a final one", stages)
	}
	return img
}

func buildImageScript(t *testing.T) image {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "deploy/build-image.sh"))
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^([A-Z_]+)='([^']*)'$`).FindAllStringSubmatch(string(b), -1) {
		vars[m[1]] = m[2]
	}
	return image{entrypoint: vars["ENTRYPOINT"], user: vars["IMAGE_USER"], expose: vars["PORT"], volume: vars["VOLUME"],
		workdir: vars["WORKDIR"], env: vars["ENV_DATA_DIR"], healthcheck: vars["HEALTHCHECK"],
		healthOptions: map[string]string{"interval": vars["HEALTHCHECK_INTERVAL"], "timeout": vars["HEALTHCHECK_TIMEOUT"],
			"start-period": vars["HEALTHCHECK_START_PERIOD"], "retries": vars["HEALTHCHECK_RETRIES"]}}
}

// The Dockerfile and the buildah script build the same image, and it is
// the one the issue asks for: entrypoint the binary, a non-root user, port
// 3000, the data volume, a health check the binary itself answers.
func TestDockerfileAndBuildahImageAgree(t *testing.T) {
	df, sh := dockerfile(t), buildImageScript(t)
	if fmt.Sprint(df) != fmt.Sprint(sh) {
		t.Errorf("the Dockerfile and deploy/build-image.sh differ:\nDockerfile: %+v\nscript:     %+v", df, sh)
	}
	var entry []string
	if err := json.Unmarshal([]byte(df.entrypoint), &entry); err != nil || len(entry) != 1 || entry[0] != "/modelgate" {
		t.Errorf("ENTRYPOINT %s", df.entrypoint)
	}
	uid, _, _ := strings.Cut(df.user, ":")
	if n, err := strconv.Atoi(uid); err != nil || n == 0 {
		t.Errorf("USER %q: want a numeric non-root user (Kubernetes runAsNonRoot checks numbers)", df.user)
	}
	if df.expose != "3000" {
		t.Errorf("EXPOSE %q", df.expose)
	}
	cmd, ok := strings.CutPrefix(df.healthcheck, "CMD ")
	var argv []string
	if !ok || json.Unmarshal([]byte(cmd), &argv) != nil || strings.Join(argv, " ") != "/modelgate healthcheck" {
		t.Errorf("HEALTHCHECK %q: want CMD [\"/modelgate\", \"healthcheck\"] (no shell in the image)", df.healthcheck)
	}
	name, value, _ := strings.Cut(df.env, "=")
	if !configVars()[name] || name != "DATA_DIR" || value != df.volume || df.workdir != df.volume {
		t.Errorf("ENV %q, WORKDIR %q: want DATA_DIR and the working directory on the volume %s", df.env, df.workdir, df.volume)
	}
	keys := make([]string, 0, len(df.healthOptions))
	for k := range df.healthOptions {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if strings.Join(keys, ",") != "interval,retries,start-period,timeout" {
		t.Errorf("HEALTHCHECK options %v", keys)
	}
}
