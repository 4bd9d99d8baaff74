//! Signature help inside a call's parentheses: the signatures of the
//! function (user-defined overloads with argument names, or built-in ones)
//! and which argument the cursor is in.

use language::builtins;
use language::syntax::ast::StmtKind;
use language::types::AdLevel;

use crate::document::{Document, is_ident_char};

/// At most this many built-in signatures are offered.
const MAX_SIGNATURES: usize = 30;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignatureInfo {
    pub label: String,
    /// Byte ranges of each parameter within `label` (labels are ASCII, so
    /// these are also UTF-16 offsets).
    pub parameters: Vec<(usize, usize)>,
    pub documentation: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignatureHelpInfo {
    pub signatures: Vec<SignatureInfo>,
    pub active_signature: usize,
    pub active_parameter: usize,
}

pub fn signature_help(document: &Document, offset: usize) -> Option<SignatureHelpInfo> {
    let offset = document.clamp(offset);
    let call = enclosing_call(&document.text, offset)?;
    let mut signatures = user_signatures(document, &call.name);
    // A forward declaration and its definition are one signature.
    let mut seen = std::collections::HashSet::new();
    signatures.retain(|s| seen.insert(s.label.clone()));
    if signatures.is_empty() {
        signatures = builtin_signatures(&call.name, call.after_tilde);
    }
    if signatures.is_empty() {
        return None;
    }
    let active_signature = signatures
        .iter()
        .position(|s| s.parameters.len() > call.argument)
        .unwrap_or(0);
    Some(SignatureHelpInfo {
        signatures,
        active_signature,
        active_parameter: call.argument,
    })
}

#[derive(Debug, PartialEq, Eq)]
struct EnclosingCall {
    name: String,
    /// 0-based index of the argument holding the cursor.
    argument: usize,
    /// `y ~ name(...)`: the variate is not written among the arguments.
    after_tilde: bool,
}

/// Walk back from `offset` to the unmatched `(` and the name before it,
/// counting top-level argument separators (`,` and conditional `|`).
fn enclosing_call(text: &str, offset: usize) -> Option<EnclosingCall> {
    let before = text.get(..offset.min(text.len()))?;
    let mut depth = 0usize;
    let mut argument = 0;
    let bytes = before.as_bytes();
    for i in (0..bytes.len()).rev() {
        match bytes[i] {
            b')' | b']' | b'}' => depth += 1,
            b'[' | b'{' if depth == 0 => return None,
            b'(' if depth == 0 => {
                let head = before[..i].trim_end();
                let start = head
                    .char_indices()
                    .rev()
                    .take_while(|(_, c)| is_ident_char(*c))
                    .last()?
                    .0;
                let name = head[start..].to_owned();
                let after_tilde = head[..start].trim_end().ends_with('~');
                return Some(EnclosingCall {
                    name,
                    argument,
                    after_tilde,
                });
            }
            b'(' | b'[' | b'{' => depth -= 1,
            b',' if depth == 0 => argument += 1,
            b'|' if depth == 0
                && bytes.get(i + 1) != Some(&b'|')
                && (i == 0 || bytes[i - 1] != b'|') =>
            {
                argument += 1
            }
            b';' if depth == 0 => return None,
            _ => {}
        }
    }
    None
}

/// User-defined overloads, with arguments as written.
fn user_signatures(document: &Document, name: &str) -> Vec<SignatureInfo> {
    let text = &document.text;
    let wanted = [
        name.to_owned(),
        format!("{name}_lpdf"),
        format!("{name}_lpmf"),
    ];
    document
        .program
        .blocks
        .iter()
        .flat_map(|b| &b.stmts)
        .filter_map(|stmt| match &stmt.kind {
            StmtKind::FunDef(def) if wanted.contains(&def.name.name) => Some(def),
            _ => None,
        })
        .map(|def| {
            let args: Vec<String> = def
                .args
                .iter()
                .map(|a| text.get(a.span.range()).unwrap_or_default().to_owned())
                .collect();
            // For `~ foo(...)`, the variate (first argument) is not written.
            let skip = usize::from(def.name.name != name);
            build(&def.name.name, &args[skip.min(args.len())..], None, None)
        })
        .collect()
}

fn builtin_signatures(name: &str, after_tilde: bool) -> Vec<SignatureInfo> {
    let (full, skip) = if after_tilde {
        let discrete = builtins::distribution(name).is_some_and(|d| d.is_discrete());
        (
            format!("{name}{}", if discrete { "_lpmf" } else { "_lpdf" }),
            1,
        )
    } else {
        (name.to_owned(), 0)
    };
    let doc = builtins::doc(&full).map(str::to_owned);
    builtins::signatures_ref(&full)
        .iter()
        .take(MAX_SIGNATURES)
        .map(|sig| {
            let args: Vec<String> = sig
                .args
                .iter()
                .skip(skip)
                .map(|(ad, ty)| match ad {
                    AdLevel::DataOnly => format!("data {ty}"),
                    AdLevel::AutoDiff => ty.to_string(),
                })
                .collect();
            let ret = sig
                .ret
                .as_ref()
                .map_or("void".to_owned(), |t| t.to_string());
            build(&full, &args, Some(ret), doc.clone())
        })
        .collect()
}

fn build(
    name: &str,
    args: &[String],
    ret: Option<String>,
    documentation: Option<String>,
) -> SignatureInfo {
    let mut label = format!("{name}(");
    let mut parameters = Vec::new();
    for (i, arg) in args.iter().enumerate() {
        if i > 0 {
            label.push_str(", ");
        }
        parameters.push((label.len(), label.len() + arg.len()));
        label.push_str(arg);
    }
    label.push(')');
    if let Some(ret) = ret {
        label.push_str(" => ");
        label.push_str(&ret);
    }
    SignatureInfo {
        label,
        parameters,
        documentation,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_call_and_argument_index() {
        let text = "x = foo(a[1, 2], bar(b, c), ";
        let call = enclosing_call(text, text.len()).unwrap();
        assert_eq!(call.name, "foo");
        assert_eq!(call.argument, 2);
        assert!(!call.after_tilde);
        let text = "y ~ normal(mu | ";
        let call = enclosing_call(text, text.len()).unwrap();
        assert_eq!(
            (call.name.as_str(), call.argument, call.after_tilde),
            ("normal", 1, true)
        );
        assert_eq!(enclosing_call("x = a[1, ", 9), None);
        assert_eq!(enclosing_call("f(x); y", 7), None);
    }
}
