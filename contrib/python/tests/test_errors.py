"""Errors: HcgError carries libhcg's whole message, column and caret."""

from __future__ import annotations

import datetime
import os
import re
import tempfile
import unittest

import hcg
from hcg import HcgError, Status
from hcg import errors

import support


def error_of(text, world=8, **kw) -> HcgError:
    try:
        hcg.Layout(text, world, **kw).close()
    except HcgError as exc:
        return exc
    raise AssertionError("layout %r was accepted" % (text,))


def caret_column(message: str) -> int:
    """1-based column of the caret on the third line, relative to the
    layout text quoted (indented by two blanks) on the second."""
    lines = message.split("\n")
    assert len(lines) == 3, message
    return lines[2].index("^") - 1


class LayoutErrors(unittest.TestCase):

    def test_readme_example(self):
        exc = error_of("llm:tp=2,pp=2,cp=0")
        self.assertEqual(exc.code, Status.ESYNTAX)
        self.assertEqual(exc.name, "ESYNTAX")
        self.assertEqual(str(exc),
                         "layout: column 18: size of 'cp' must be a positive "
                         "integer, got '0'\n"
                         "  llm:tp=2,pp=2,cp=0\n"
                         "                   ^")
        self.assertEqual((exc.line, exc.column), (1, 18))

    def test_caret_matches_column(self):
        cases = [
            "tp=2,dp=x",
            "tp=2,tp=2",
            "llm:tp=2,dp=4; llm/e:pp,ep=4",
            "llm:tp=2,dp=2,pp=2; llm/bad:pp,ep=4",
            "llm:tp=2,dp=*; llm/e:ep=*,x=*",
            "Bad:tp=2",
            "tp=2,,dp=4",
            "tp=2;dp",
        ]
        for text in cases:
            with self.subTest(layout=text):
                exc = error_of(text)
                self.assertIn("column %d:" % exc.column, exc.message)
                self.assertEqual(caret_column(exc.message), exc.column)
                self.assertEqual(exc.message.split("\n")[1], "  " + text)

    def test_second_line_of_a_multiline_layout(self):
        exc = error_of("llm:tp=2,\n  dp=4,\n  pp=0\n")
        self.assertEqual(exc.line, 3)
        self.assertEqual(exc.message.split("\n")[1], "    pp=0")
        self.assertEqual(caret_column(exc.message), exc.column)

    def test_nul_inside_text_is_an_error(self):
        exc = error_of("tp=2\0,dp=4")
        self.assertIn(exc.code, (Status.ESYNTAX, Status.EINVAL))

    def test_world_mismatch(self):
        exc = error_of("tp=2,dp=3", 8)
        self.assertEqual(exc.code, Status.ELAYOUT)
        exc = error_of("tp=2,dp=*", 0)
        self.assertIn(exc.code, (Status.ELAYOUT, Status.EINVAL))

    def test_limits(self):
        exc = error_of("tp=2," * 20000 + "dp=1", 2)
        self.assertEqual(exc.code, Status.ELIMIT)
        exc = error_of("tp=2,dp=4", 8, max_bytes=4)
        self.assertEqual(exc.code, Status.ELIMIT)

    def test_no_language_module(self):
        exc = error_of("a:tp=4; b:tp=4")
        self.assertIn("no language module", exc.message)
        hcg.Layout("a:tp=4; b:tp=4", 8, language="b").close()

    def test_unreadable_file(self):
        exc = error_of("@/nonexistent/layout")
        self.assertIn(exc.code, (Status.EIO, Status.ENOTFOUND))
        self.assertIn("/nonexistent/layout", exc.message)

    def test_same_message_as_the_command(self):
        for text in ("llm:tp=2,pp=2,cp=0", "llm:tp=2,dp=2,pp=2; llm/bad:pp,ep=4",
                     "tp=2,dp=8"):
            with self.subTest(layout=text):
                proc = support.cli("check", "-n", "8", text, check=False)
                self.assertEqual(proc.returncode, 2)
                self.assertEqual(proc.stderr, "hcg: %s\n" % error_of(text).message)


class QueryErrors(unittest.TestCase):

    def setUp(self):
        self.L = hcg.Layout("vision:tp=2,dp=2; llm:tp=2,dp=*", 8)
        self.addCleanup(self.L.close)

    def test_bad_specs(self):
        for spec, code in (("llm:zz", Status.ENOTFOUND),
                           ("x:tp", Status.ENOTFOUND),
                           ("llm/e:tp", Status.ENOTFOUND)):
            with self.subTest(spec=spec):
                with self.assertRaises(HcgError) as cm:
                    self.L.request(spec)
                self.assertEqual(cm.exception.code, code)
                self.assertTrue(cm.exception.message)

    def test_rank_outside_the_grid(self):
        with self.assertRaises(HcgError) as cm:
            self.L.group_of_rank("llm:tp", 2)
        self.assertEqual(cm.exception.code, Status.ENOTMEMBER)
        with self.assertRaises(HcgError) as cm:
            self.L.coords(7, "vision")
        self.assertEqual(cm.exception.code, Status.ENOTMEMBER)
        with self.assertRaises(HcgError) as cm:
            self.L.env(8)
        self.assertEqual(cm.exception.code, Status.ENOTMEMBER)

    def test_ints_that_do_not_fit_c(self):
        with self.assertRaises(HcgError) as cm:
            self.L.coords(2 ** 40, "llm")
        self.assertEqual(cm.exception.code, Status.ERANGE)
        with self.assertRaises(TypeError):
            self.L.coords(True, "llm")
        with self.assertRaises(TypeError):
            self.L.coords("3", "llm")

    def test_grid_must_be_named_when_several(self):
        with self.assertRaises(HcgError) as cm:
            self.L.coords(5)
        self.assertEqual(cm.exception.code, Status.EINVAL)

    def test_request_of_another_layout(self):
        with hcg.Layout("a:x=8; llm@0:tp=8", 8) as other:
            req = other.request("a:x")
        with self.assertRaises(HcgError):
            self.L.enumerate(req)

    def test_closed_layout(self):
        L = hcg.Layout("tp=2,dp=4", 8)
        L.close()
        L.close()  # twice is fine
        self.assertTrue(L.closed)
        with self.assertRaises(HcgError) as cm:
            L.enumerate("tp")
        self.assertEqual(cm.exception.code, Status.EINVAL)
        self.assertIn("closed", str(cm.exception))
        # The copies made at parse time stay readable.
        self.assertEqual(L.text, "world@0:tp=2,dp=4")

    def test_bad_embedding_kind(self):
        with self.assertRaises(HcgError):
            self.L.embedding_groups("nope")


class Files(unittest.TestCase):

    def test_layout_from_a_file(self):
        with tempfile.NamedTemporaryFile("w", suffix=".hcg", delete=False) as f:
            f.write("# the language model\nllm:tp=2,\n    dp=*\n")
        self.addCleanup(os.unlink, f.name)
        with hcg.Layout("@" + f.name, 8) as a, hcg.Layout.from_file(f.name, 8) as b:
            self.assertEqual(a.text, "llm@0:tp=2,dp=4")
            self.assertEqual(b.text, a.text)


class Kinds(unittest.TestCase):
    """Each error is also the built-in a torch user expects, and still an
    HcgError with its status."""

    def setUp(self):
        self.L = hcg.Layout("vision:tp=2,dp=2; llm:tp=2,dp=*", 8)
        self.addCleanup(self.L.close)

    def check(self, exc, builtin, kind, code):
        self.assertIsInstance(exc, builtin)
        self.assertIsInstance(exc, kind)
        self.assertIsInstance(exc, HcgError)
        self.assertEqual(exc.code, code)

    def test_a_bad_layout_is_a_value_error(self):
        with self.assertRaises(ValueError) as cm:
            hcg.Layout("tp=2,dp=x", 8)
        self.check(cm.exception, ValueError, hcg.HcgValueError, Status.ESYNTAX)
        with self.assertRaises(ValueError) as cm:
            hcg.Layout("tp=2,dp=3", 8)
        self.check(cm.exception, ValueError, hcg.HcgValueError, Status.ELAYOUT)
        self.assertEqual(str(cm.exception), cm.exception.message)

    def test_a_rank_outside_is_a_value_error(self):
        with self.assertRaises(ValueError) as cm:
            self.L.coords(7, "vision")
        self.check(cm.exception, ValueError, hcg.HcgValueError,
                   Status.ENOTMEMBER)
        with self.assertRaises(ValueError) as cm:
            self.L.coords(2 ** 40, "llm")
        self.check(cm.exception, ValueError, hcg.HcgValueError, Status.ERANGE)

    def test_a_missing_name_is_a_key_error(self):
        for call in (lambda: self.L.request("llm:zz"),
                     lambda: self.L.grid("nope"),
                     lambda: self.L.grid("llm").view("nope"),
                     lambda: self.L.field_request("llm", "nope")):
            with self.assertRaises(KeyError) as cm:
                call()
            self.check(cm.exception, KeyError, hcg.HcgKeyError,
                       Status.ENOTFOUND)
            # Not KeyError's quoted repr: the message as it is.
            self.assertEqual(str(cm.exception), cm.exception.message)

    def test_a_wrong_type_is_a_type_error(self):
        for call in (lambda: self.L.coords("3", "llm"),
                     lambda: self.L.coords(True, "llm"),
                     lambda: self.L.request(3)):
            with self.assertRaises(TypeError) as cm:
                call()
            self.check(cm.exception, TypeError, hcg.HcgTypeError,
                       Status.EINVAL)

    def test_a_missing_environment_is_a_runtime_error(self):
        with self.assertRaises(RuntimeError) as cm:
            hcg.env.from_environ({})
        self.check(cm.exception, RuntimeError, hcg.HcgRuntimeError,
                   Status.EENV)

    def test_the_kind_of_every_status(self):
        builtins = {hcg.HcgValueError: ValueError, hcg.HcgTypeError: TypeError,
                    hcg.HcgKeyError: KeyError,
                    hcg.HcgTimeoutError: TimeoutError,
                    hcg.HcgRuntimeError: RuntimeError}
        self.assertEqual(set(errors.KIND), set(Status) - {Status.OK})
        for code in errors.KIND:
            with self.subTest(code=code.name):
                exc = errors.error(code, "m", 1, 2)
                self.assertIs(type(exc), errors.KIND[code])
                self.assertIsInstance(exc, builtins[type(exc)])
                self.assertEqual((exc.code, exc.message, exc.line, exc.column),
                                 (code, "m", 1, 2))
        self.assertIs(type(errors.error(Status.ETIMEOUT, "")),
                      hcg.HcgTimeoutError)
        newer = errors.error(99, "from a newer libhcg")
        self.assertIsInstance(newer, hcg.HcgRuntimeError)
        self.assertEqual((newer.code, newer.name), (99, "99"))

    def test_a_peer_error_is_a_runtime_error(self):
        exc = hcg.PeerError(Status.ETIMEOUT, "step failed", 3, "why")
        self.assertIsInstance(exc, RuntimeError)
        self.assertNotIsInstance(exc, TimeoutError)  # this rank did not wait
        self.assertEqual((exc.code, exc.rank, exc.reason),
                         (Status.ETIMEOUT, 3, "why"))

    def test_hcg_torch_errors_keep_their_builtins(self):
        # Every error is an HcgError; these two keep the built-in they were
        # before (what `import torch` and a failed process start raise).
        # Neither needs torch.
        import errno as errnos

        from hcg.torch import TorchUnavailableError
        from hcg.torch.store import StoreStartError

        exc = TorchUnavailableError("no torch")
        self.check(exc, ImportError, HcgError, Status.ENOTSUP)
        self.assertNotIsInstance(exc, RuntimeError)
        self.assertEqual((str(exc), exc.msg), ("no torch", "no torch"))
        exc = StoreStartError("cannot run x: no such file", errnos.ENOENT)
        self.check(exc, OSError, HcgError, Status.EIO)
        self.assertNotIsInstance(exc, RuntimeError)
        self.assertEqual((exc.errno, str(exc)),
                         (errnos.ENOENT, "cannot run x: no such file"))
        # No system call failed: no error number (not hcg's status).
        self.assertIsNone(StoreStartError("ended before it listened").errno)

    def test_timeouts_of_hcg_torch(self):
        # hcg.torch's argument checks need no torch.
        from hcg.torch import _base

        self.assertEqual(_base.timeout_of(2.5), datetime.timedelta(seconds=2.5))
        self.assertEqual(_base.timeout_of(datetime.timedelta(minutes=1)),
                         datetime.timedelta(seconds=60))
        with self.assertRaises(TypeError) as cm:
            _base.timeout_of("5")  # type: ignore[arg-type]
        self.check(cm.exception, TypeError, hcg.HcgTypeError, Status.EINVAL)
        with self.assertRaises(ValueError) as cm:
            _base.timeout_of(-1)
        self.check(cm.exception, ValueError, hcg.HcgValueError, Status.EINVAL)

    def test_only_a_timeout_is_reported_as_one(self):
        # A group whose members all arrived but whose connection failed in
        # torch: ETIMEOUT only when torch says it timed out, whenever that
        # was; any other RuntimeError is EIO, even at the deadline.
        from hcg.torch import _meet

        what = "process group 'g' (ranks 0, 1)"
        late = _meet.formation_error(what, 10, None,
                                     RuntimeError("Connection reset by peer"),
                                     10.0)
        self.check(late, RuntimeError, hcg.HcgRuntimeError, Status.EIO)
        self.assertNotIsInstance(late, TimeoutError)
        self.assertIn("connecting its members failed after 10.0 s", late.message)
        for text in ("Socket Timeout", "Timed out after 10 seconds waiting "
                     "for clients", "Wait timeout after 5000ms"):
            with self.subTest(torch=text):
                early = _meet.formation_error(what, 10, None,
                                              RuntimeError(text), 2.0)
                self.check(early, TimeoutError, hcg.HcgTimeoutError,
                           Status.ETIMEOUT)
                self.assertIn("did not form within 10 s", early.message)
        refused = _meet.formation_error(what, 10, None, ValueError("bad"), 0.1)
        self.check(refused, ValueError, hcg.HcgValueError, Status.EINVAL)


#: Where enum hcg_status is in a checkout (the binding's tests run from one).
_HEADER = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       os.pardir, os.pardir, os.pardir, "runtime", "hcg_base.h")


class StatusCodes(unittest.TestCase):
    """hcg.Status is retyped from hcg_base.h (libhcg cannot list its codes):
    this test is what keeps the two the same."""

    def test_status_is_enum_hcg_status_of_the_header(self):
        if not os.path.exists(_HEADER):
            self.skipTest("no runtime/hcg_base.h beside this binding")
        with open(_HEADER, encoding="utf-8") as f:
            text = f.read()
        body = re.search(r"enum hcg_status \{(.*?)\};", text, re.S)
        self.assertIsNotNone(body, "no enum hcg_status in " + _HEADER)
        codes = {name: int(value) for name, value in
                 re.findall(r"\bHCG_(\w+)\s*=\s*(\d+)", body.group(1))}
        self.assertEqual(codes, {s.name: int(s) for s in Status})

    def test_the_library_names_every_code(self):
        unknown = errors.strerror(len(Status) + 100)
        for code in Status:
            with self.subTest(code=code.name):
                self.assertTrue(errors.strerror(code))
                self.assertNotEqual(errors.strerror(code), unknown)


if __name__ == "__main__":
    unittest.main()
