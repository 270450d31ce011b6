"""A Jupyter notebook (a Colab download) is read for its cells and outputs, as its reader sees them."""
from __future__ import annotations

import json
from pathlib import Path

from diagnose.parsers import parse
from diagnose.parsers.notebook import is_notebook, notebook_to_text

# The HF Trainer's progress in a notebook: an HTML table only, its plain text the object's repr; each tag on a line
# of its own, as IPython writes it.
_TABLE = ("\n    <div>\n      <progress value='60' max='60' style='width:300px; height:20px;'></progress>\n"
          "      [60/60 01:25, Epoch 0/1]\n    </div>\n    <table border=\"1\" class=\"dataframe\">\n  <thead>\n"
          " <tr style=\"text-align: left;\">\n      <th>Step</th>\n      <th>Training Loss</th>\n    </tr>\n"
          "  </thead>\n  <tbody>\n"
          + "".join(f"    <tr>\n      <td>{i}</td>\n      <td>{2.5 - i / 100:.6f}</td>\n    </tr>\n"
                    for i in range(1, 31))
          + "  </tbody>\n</table><p>")
_OOM = ("\x1b[0;31mOutOfMemoryError\x1b[0m: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.15 GiB total "
        "capacity; 75.30 GiB already allocated; 1.20 GiB free; 77.00 GiB reserved in total by PyTorch)")


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _notebook(colab: bool) -> dict:
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": _lines("# Fine-tune\nwith Unsloth")},
        {"cell_type": "code", "execution_count": 3, "metadata": {},
         "source": _lines("args = TrainingArguments(\n    per_device_train_batch_size = 2,\n"
                          "    gradient_accumulation_steps = 4,\n)\ntrainer.train()"),
         "outputs": [
             {"name": "stdout", "output_type": "stream",
              "text": _lines("==((====))==  Unsloth - 2x faster free finetuning | Num GPUs used = 1\n"
                             "   \\\\   /|    Num examples = 51,760 | Num Epochs = 1 | Total steps = 60\n")},
             {"output_type": "display_data", "metadata": {},
              "data": {"text/plain": ["<IPython.core.display.HTML object>"], "text/html": _lines(_TABLE)}}]},
        {"cell_type": "code", "execution_count": 4, "metadata": {}, "source": "train_loop()",
         "outputs": [{"name": "stdout", "output_type": "stream",
                      "text": [f"step {10 * i} loss 2.4833 time {0.85 + 0.01 * (i % 3):.3f}s\n" for i in range(1, 41)]},
                     {"output_type": "error", "ename": "OutOfMemoryError", "evalue": "CUDA out of memory.",
                      "traceback": ["\x1b[0;31m----------------------------------------\x1b[0m", _OOM]}]},
    ]
    meta = {"kernelspec": {"name": "python3", "display_name": "Python 3"}}
    # Colab writes `nbformat` first; nbformat itself sorts the keys, `cells` first
    return {"nbformat": 4, "nbformat_minor": 0, "metadata": meta, "cells": cells} if colab else \
        {"cells": cells, "metadata": meta, "nbformat": 4, "nbformat_minor": 5}


def test_a_notebooks_outputs_are_read_as_printed(tmp_path: Path) -> None:
    for colab in (True, False):
        path = tmp_path / f"finetune_{colab}.ipynb"
        path.write_text(json.dumps(_notebook(colab), indent=1))
        before = path.read_bytes()
        m = parse([str(path)])
        clock = next(s for s in m.streams if s.step_clock)
        assert clock.template == "step # loss # time #s" and clock.lines == 40
        assert m.frames["steps"].filter(m.frames["steps"]["step_time_s"].is_not_null()).height == 40
        # the HTML table's rows, as the page shows them: one row a line, its cells a tab apart
        assert any(s.template == "Step: #, Training Loss: #" and s.lines == 30 for s in m.streams)
        f = m.facts
        assert (f.world_size, f.micro_batch_per_gpu, f.grad_accum_steps, f.total_steps) == (1, 2, 4, 60)
        assert "oom" in m.frames["events"]["kind"].to_list()
        assert path.read_bytes() == before


def test_only_a_notebook_is_read_as_one(tmp_path: Path) -> None:
    assert is_notebook(b'{\n "cells": [') and is_notebook(b'\xef\xbb\xbf{"nbformat": 4, "cells": []}')
    assert not is_notebook(b'{"step": 1, "loss": 2.48}') and not is_notebook(b"step 1 cells: 2")
    assert notebook_to_text(b'{"cells": 5}') is None and notebook_to_text(b'{"cells": [') is None
    # JSON that opens like a notebook and is none is read as the text it is
    odd = tmp_path / "odd.json"
    odd.write_text('{"metadata": {"note": "x"}, "rows": [\n' + ",\n".join(
        f'{{"step": {10 * i}, "loss": 2.4833, "step_time": 0.850}}' for i in range(1, 31)) + "\n]}\n")
    m = parse([str(odd)])
    assert m.frames["steps"].height == 30
