//! The HTML report of `rocelab validate` in a real browser: Debian's headless Chromium
//! (`.ci/run` installs the package `chromium`) loads a copy of the report with a probe script
//! appended (the report itself has no script), which measures every chart; the test fails on a
//! console error, a chart with no drawn area, or a polyline of zero length. It also takes a
//! screenshot.
//!
//! Without Chromium the test fails in CI (`CI` set) and elsewhere prints a loud SKIPPED line.

use std::path::PathBuf;
use std::process::Command;

mod skip;

fn chromium(test: &str) -> Option<PathBuf> {
    skip::tool_or_skip(test, &["chromium", "chromium-browser"], "chromium")
}

/// Appended to a copy of the report: counts the charts and checks each one drew something.
const PROBE: &str = r#"<script>
window.addEventListener('load', () => {
  const svgs = [...document.querySelectorAll('figure svg')];
  const bad = [];
  svgs.forEach((s, i) => {
    const r = s.getBoundingClientRect();
    if (r.width < 100 || r.height < 50) bad.push('svg ' + i + ' is ' + r.width + 'x' + r.height);
    s.querySelectorAll('polyline').forEach(p => { if (!(p.getTotalLength() > 0)) bad.push('empty line in svg ' + i); });
  });
  const rows = document.querySelectorAll('#summary tr').length;
  document.body.setAttribute('data-probe', 'charts=' + svgs.length + ';rows=' + rows + ';bad=' + bad.join('|'));
});
</script>
"#;

#[test]
fn the_validate_report_renders_every_chart_in_chromium() {
    let Some(browser) = chromium("the_validate_report_renders_every_chart_in_chromium") else { return };
    // The shipped example fails its steady-state sustained load (docs/validate.md): exit 1.
    render_in_chromium(&browser, "leaf-spine-small.toml", "sustained,incast,microburst", 1, "a");
}

/// A failing report with the file's named scenarios (two collectives beside an incast, each a
/// section of its own) renders as well.
#[test]
fn a_failing_report_with_named_scenarios_renders_in_chromium() {
    let Some(browser) = chromium("a_failing_report_with_named_scenarios_renders_in_chromium") else { return };
    let page = render_in_chromium(&browser, "ib-vs-roce/roce-best.toml", "collective", 1, "b");
    for id in ["alltoall", "allreduce-beside-incast", "alltoall-beside-incast"] {
        assert!(page.contains(&format!("<h2 id=\"{id}\">")), "a section for {id}");
    }
    assert!(page.contains("allreduce-beside-incast.busbw"), "the failing check is named");
}

/// Validates `examples/<example>` (`--only only`, expecting exit `status`) into an HTML report,
/// loads it in headless Chromium with a probe that measures every chart, and checks that
/// every chart rendered, no console error, and a screenshot; returns the page.
fn render_in_chromium(browser: &std::path::Path, example: &str, only: &str, status: i32, tag: &str) -> String {
    let dir = std::env::temp_dir().join(format!("rocelab-browser-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let report = dir.join("report.html");
    let fabric = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples").join(example);
    let o = Command::new(env!("CARGO_BIN_EXE_rocelab"))
        .args(["validate", fabric.to_str().unwrap(), "-q", "--only", only, "--html"])
        .arg(&report)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(status), "{o:?}");
    let page = std::fs::read_to_string(&report).unwrap();
    assert!(!page.contains("<script"), "the report itself runs no script");
    let charts = page.matches("<figure><svg").count();
    assert!(charts >= 6, "{charts} charts");
    let probed = dir.join("probed.html");
    std::fs::write(&probed, page.replace("</body>", &format!("{PROBE}</body>"))).unwrap();
    let base = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--window-size=1200,2400",
        "--virtual-time-budget=5000",
        "--enable-logging=stderr",
        "--v=0",
    ];
    let url = format!("file://{}", probed.display());
    let dom = Command::new(browser).args(base).arg("--dump-dom").arg(&url).output().unwrap();
    let err = String::from_utf8_lossy(&dom.stderr);
    assert!(dom.status.success(), "chromium failed: {err}");
    // Chromium logs page console messages as `CONSOLE` lines on stderr.
    let console: Vec<&str> = err.lines().filter(|l| l.contains("CONSOLE") || l.contains("Uncaught")).collect();
    assert!(console.is_empty(), "console errors: {console:?}");
    let out = String::from_utf8_lossy(&dom.stdout);
    let probe = out
        .split("data-probe=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap_or_else(|| panic!("the probe did not run: {out:.2000}"));
    // The summary table: its header row and one row per check (other tables have rows too).
    let summary = page.split("<table id=\"summary\">").nth(1).and_then(|t| t.split("</table>").next()).unwrap_or("");
    assert_eq!(probe, format!("charts={charts};rows={};bad=", summary.matches("<tr class=").count() + 1), "{probe}");
    let shot = dir.join("report.png");
    let s =
        Command::new(browser).args(base).arg(format!("--screenshot={}", shot.display())).arg(&url).output().unwrap();
    assert!(s.status.success(), "{}", String::from_utf8_lossy(&s.stderr));
    let png = std::fs::read(&shot).unwrap();
    assert!(png.starts_with(b"\x89PNG") && png.len() > 20_000, "screenshot of {} B", png.len());
    let _ = std::fs::remove_dir_all(&dir);
    page
}
