// Package htmltest tests the HTML report as a person sees it: it opens the
// page in headless Chromium with no network, clicks and types through the
// Chrome DevTools Protocol (github.com/chromedp/chromedp), checks the DOM
// and the drawn flame graph, times the render of a 100k-stack profile and
// saves screenshots ($PERFDOCTOR_ARTIFACTS, else a temporary directory).
//
// Without Chromium the tests skip, except under CI (CI set), where they
// fail: scripts/test.sh installs Debian's chromium.
package htmltest
