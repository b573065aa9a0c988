package browser_test

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"testing"

	"github.com/peerwire/jsonrpc/browser"
)

// TestHandler pins what Handler serves: the embedded files, byte for byte
// as they are in the directory, with a JavaScript type for the module (a
// browser refuses a module script of another type), and 404 for the rest.
func TestHandler(t *testing.T) {
	srv := httptest.NewServer(http.StripPrefix("/js/", browser.Handler()))
	defer srv.Close()
	for _, tc := range []struct {
		path, status, ctype, file string
	}{
		{"/js/jsonrpc.js", "200 OK", "text/javascript; charset=utf-8", "jsonrpc.js"},
		{"/js/errors.js", "200 OK", "text/javascript; charset=utf-8", "errors.js"},
		{"/js/wire.js", "200 OK", "text/javascript; charset=utf-8", "wire.js"},
		{"/js/topics.js", "200 OK", "text/javascript; charset=utf-8", "topics.js"},
		{"/js/jsonrpc.d.ts", "200 OK", "text/plain; charset=utf-8", "jsonrpc.d.ts"},
		{"/js/package.json", "200 OK", "application/json", "package.json"},
		{"/js/", "404 Not Found", "", ""},
		{"/js/browser.go", "404 Not Found", "", ""},
		{"/js/../browser.go", "404 Not Found", "", ""},
		{"/js/test/client.test.mjs", "404 Not Found", "", ""},
	} {
		resp, err := http.Get(srv.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.Status != tc.status {
			t.Errorf("GET %s: %s, want %s", tc.path, resp.Status, tc.status)
			continue
		}
		if tc.file == "" {
			continue
		}
		if got := resp.Header.Get("Content-Type"); got != tc.ctype {
			t.Errorf("GET %s: Content-Type %q, want %q", tc.path, got, tc.ctype)
		}
		want, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		if string(body) != string(want) {
			t.Errorf("GET %s: the body is not %s", tc.path, tc.file)
		}
	}
	// Every module jsonrpc.js imports is in FS and served: a page whose
	// import 404s gets no client at all.
	names, _ := fs.Glob(browser.FS(), "*.js")
	for _, name := range names {
		resp, err := http.Get(srv.URL + "/js/" + name)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/javascript; charset=utf-8" {
			t.Errorf("GET /js/%s: %s, %s", name, resp.Status, resp.Header.Get("Content-Type"))
		}
	}
	src, _ := fs.ReadFile(browser.FS(), "jsonrpc.js")
	for _, imp := range regexp.MustCompile(`from '\./([a-z]+\.js)'`).FindAllStringSubmatch(string(src), -1) {
		if !slices.Contains(names, imp[1]) {
			t.Errorf("jsonrpc.js imports %s, which FS lacks", imp[1])
		}
	}
	if len(names) < 4 {
		t.Errorf("FS holds %v, want jsonrpc.js and the modules it imports", names)
	}
}
