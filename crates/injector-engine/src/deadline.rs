//! When an injection must stop: its admission request's deadline, after which nobody waits for
//! the answer (the API server has given up, and the webhook has answered that it did not
//! complete).
//!
//! The pipeline enters a [`Scope`] with the request's deadline; below it, the template engine
//! is given [`current`] (it looks at the clock every few steps) and the pipeline calls [`check`]
//! between its stages. The stages in between (the merge, the Go round trip, post-processing, the
//! patch) are linear in the pod's size and take a few tens of milliseconds on the largest pod
//! the API server stores, so no CPU is spent long on a request already answered.
//!
//! Like the render recording ([`crate::render::objects::reads`]), the deadline is thread-local,
//! so that it does not pass through every stage's signature: an injection runs synchronously on
//! the thread that asked for it.

use std::cell::Cell;
use std::time::Instant;

use crate::pipeline::InjectError;

thread_local! {
    static DEADLINE: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// The deadline of the injection running on this thread while it lives; the one before it
/// comes back when it is dropped.
#[must_use = "the deadline holds only while the scope lives"]
pub struct Scope {
    previous: Option<Instant>,
}

impl Scope {
    /// Enters `deadline` (`None`: none of its own). An injection inside another keeps the earlier
    /// of the two deadlines.
    pub fn enter(deadline: Option<Instant>) -> Scope {
        let previous = DEADLINE.get();
        let earlier = match (previous, deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        DEADLINE.set(earlier);
        Scope { previous }
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        DEADLINE.set(self.previous);
    }
}

/// The deadline of the injection running on this thread, if it has one.
pub fn current() -> Option<Instant> {
    DEADLINE.get()
}

/// Whether the deadline has passed.
pub fn passed() -> bool {
    current().is_some_and(|deadline| Instant::now() >= deadline)
}

/// An error when the deadline has passed: the injection stops `when` (a clause: "before writing
/// the patch").
pub fn check(when: &str) -> Result<(), InjectError> {
    if passed() {
        return Err(exceeded(when));
    }
    Ok(())
}

/// The error of an injection stopped at its deadline, `when` (a clause: "while rendering
/// template \"sidecar\"").
pub fn exceeded(when: &str) -> InjectError {
    InjectError(format!(
        "sidecar injection did not complete within the admission request's deadline: it stopped {when}; \
         the pod may be too large for the injection templates, or the injector is overloaded"
    ))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_scope_holds_its_deadline_and_gives_back_the_one_before() {
        assert_eq!(current(), None);
        assert!(!passed());
        assert_eq!(check("anything"), Ok(()));
        let later = Instant::now() + Duration::from_secs(3600);
        let past = Instant::now();
        {
            let _outer = Scope::enter(Some(later));
            assert_eq!(current(), Some(later));
            assert_eq!(check("before merging"), Ok(()));
            {
                // An inner injection without a deadline keeps the outer one; with an earlier
                // one, it takes that.
                let _none = Scope::enter(None);
                assert_eq!(current(), Some(later));
                let _inner = Scope::enter(Some(past));
                assert_eq!(current(), Some(past));
                assert!(passed());
                let error = check("before post-processing the pod").expect_err("the deadline passed");
                assert!(
                    error.0.starts_with(
                        "sidecar injection did not complete within the admission request's deadline: \
                         it stopped before post-processing the pod;"
                    ),
                    "{error}"
                );
            }
            assert_eq!(current(), Some(later));
        }
        assert_eq!(current(), None);
    }
}
