#!/usr/bin/env python3
"""Held-out English text for judging compressed MiniLM-L6 models on sentences that were never used
to calibrate or tune anything: the 64 samples in ../shared/tools/minilm/samples calibrate, these
judge. 48 sentences written for this bench (no external data), deliberately unlike the calibration
set: technical and workplace text, numbers and units, lists, questions, very short and long
sentences, a little non-English punctuation.

heldout_samples(work, tokenizer_json, model) tokenizes them with ../shared/tools/minilm/minilm_tok.py
(unpadded: one sample folder per sentence with input_ids, attention_mask, token_type_ids of its own
length) and returns [(feeds, reference)] with ONNX Runtime's fp32 outputs of `model` as reference.
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.join(os.path.dirname(HERE), "..", "shared", "tools", "minilm")

SENTENCES = [
    "Restart the server after the update finishes.",
    "The quarterly report shows revenue up 12 percent compared with last year.",
    "Which port does the database listen on by default?",
    "Unplug the charger before cleaning the keyboard.",
    "Our team moved the stand-up meeting to 9:30 because two people work from another time zone.",
    "The firmware upgrade failed at 87 percent and the device rebooted into recovery mode.",
    "Yes.",
    "Thanks, that fixed it!",
    "The invoice lists three items: a monitor, a docking station and two HDMI cables.",
    "A memory leak in the image decoder made the service crash every few hours under load.",
    "Please review the pull request before Friday so we can merge it into the release branch.",
    "Water boils at 100 degrees Celsius at sea level, but at a lower temperature in the mountains.",
    "The bridge was closed for repairs, so the bus took a detour through the industrial area.",
    "How many kilometres is it from the airport to the city centre?",
    "The spreadsheet formula returns an error when the cell is empty.",
    "She presented the new budget to the board, answered questions for an hour and then left for the airport.",
    "Turn left at the second roundabout and the warehouse is on your right.",
    "The vaccine trial enrolled 4,000 volunteers across twelve hospitals.",
    "Is the meeting room on the third floor free this afternoon?",
    "The printer on the second floor keeps jamming; someone should call the technician.",
    "Compile the project with optimisations enabled and run the benchmark twice.",
    "The orchestra rehearsed the symphony for weeks before the opening night.",
    "Battery life dropped sharply after the last software update.",
    "Our flight was delayed by three hours because of fog at the departure airport.",
    "The committee approved the proposal with minor changes to the timeline.",
    "Heavy snow closed the mountain pass for most of the week.",
    "He forgot his password and had to reset it twice in one morning.",
    "The startup raised fifteen million dollars to expand into Asian markets.",
    "Can I return the jacket if it does not fit?",
    "The museum is closed on Mondays and public holidays.",
    "The algorithm sorts the list in place and uses constant extra memory.",
    "After the storm, volunteers cleared fallen trees from the park paths and repaired the playground fence.",
    "The patient was advised to rest, drink plenty of fluids and return if the fever persisted.",
    "Store the samples at minus twenty degrees and label each tube with the date.",
    "The match was cancelled.",
    "Interest rates rose for the third time this year, making mortgages more expensive for new buyers.",
    "Why does the build take twice as long on the new laptop?",
    "The hotel offers free breakfast, a small gym and parking for an extra fee.",
    "Solar panels on the roof now cover most of the building's electricity use in summer.",
    "The translation of the manual into Spanish, French and German will be ready next month.",
    "My neighbour's dog barks whenever the delivery van stops outside.",
    "The contract expires at the end of June unless both parties agree to renew it.",
    "Scientists measured the glacier's retreat using satellite images taken over twenty years.",
    "Plug the sensor into port B and wait for the green light.",
    "Every Thursday evening the community centre runs a free coding class for teenagers, and last "
    "week twenty students built a small weather station that posts readings to a web page.",
    "The tram line extension will connect the university campus with the central railway station, "
    "cutting the journey from forty minutes to fifteen, although construction will disrupt traffic "
    "on the main avenue for at least two years.",
    "Delete the temporary files, empty the cache and restart the application.",
    "Le café est fermé aujourd'hui — come back tomorrow.",
]


def heldout_samples(work, tokenizer_json, model):
    """[(feeds, reference)] for SENTENCES; also writes them as sample folders under work/heldout."""
    import onnxruntime as ort
    sys.path.insert(0, TOOLS)
    from minilm_tok import load_tokenizer  # noqa: E402

    tok = load_tokenizer(tokenizer_json)
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    out = []
    for i, text in enumerate(SENTENCES):
        enc = tok.encode([text], pad_to=None)
        d = os.path.join(work, "heldout", f"{i:02d}")
        os.makedirs(d, exist_ok=True)
        for k, v in enc.items():
            np.save(os.path.join(d, k + ".npy"), v)
        ref = dict(zip(names, sess.run(None, enc)))
        out.append((enc, ref))
    return out


def tokenizer_json(model):
    """tokenizer.json next to an exported model (export_minilm.py OUT keeps it in OUT/all-MiniLM-L6-v2)."""
    return os.path.join(os.path.dirname(os.path.abspath(model)), "all-MiniLM-L6-v2", "tokenizer.json")
