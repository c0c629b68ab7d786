//! The flame graph's hover names only frames it draws: a frame narrower than the
//! draw's 0.4-pixel cut is not painted, so a tooltip for it would name something the
//! user cannot see (the hit test walked every frame, drawn or not). In headless
//! Chromium, on a profile whose `a_tiny` is a millionth of the width at the left edge.

use e2e::{browser_script, heapsnap, run, target_dir, www};
use std::process::Command;

#[test]
fn hovering_where_a_frame_too_thin_to_draw_lies_names_nothing() {
    let www = www();
    let dir = target_dir().join("viewer-hit");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let folded = dir.join("thin.folded");
    std::fs::write(&folded, "main;a_tiny 1\nmain;zbig 1000000\n").unwrap();
    let profile = dir.join("thin.pb.gz");
    run(Command::new(heapsnap())
        .arg("convert")
        .arg(&folded)
        .arg("-o")
        .arg(&profile));
    let result = browser_script(
        "viewer_hit.mjs",
        &[www.as_os_str(), profile.as_os_str(), dir.as_os_str()],
        &dir,
    );
    assert_eq!(result["errors"], serde_json::json!([]), "{result}");
    let leftmost = result["leftmost"].as_str().unwrap_or_default();
    assert!(
        !leftmost.contains("a_tiny"),
        "a tooltip for a frame too thin to draw: {leftmost:?}"
    );
    // The hover itself works: the frame that fills the row is named.
    let middle = result["middle"].as_str().unwrap_or_default();
    assert!(middle.contains("zbig"), "{middle:?}");
}
