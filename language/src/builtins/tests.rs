use super::*;

#[test]
fn table_builds() {
    assert!(is_builtin("normal_lpdf"));
}
