// SPDX-License-Identifier: GPL-2.0
// Drives the SVG flame graph's embedded script in jsdom (Debian: node-jsdom) for
// tests/test_profile_writers.py: loads the SVG, runs its <script>, then clicks the
// first box named ZOOM, resets the zoom, searches for SEARCH, resets the search,
// searches for an invalid regular expression, and prints the state of every box after
// each step as JSON. The test compares that with the hand-made profile.
//
// usage: node flamegraph_script.js FILE.svg ZOOM SEARCH
"use strict";
const fs = require("fs");
const { JSDOM } = require("jsdom");

const [file, zoomName, searchTerm] = process.argv.slice(2);
const dom = new JSDOM(fs.readFileSync(file, "utf8"), { contentType: "image/svg+xml", runScripts: "outside-only" });
const w = dom.window;
const d = w.document;
const alerts = [];
let answer = null;
w.prompt = () => answer;
w.alert = (message) => alerts.push(String(message));

// jsdom does not run <script> in an SVG document by itself: run it as a browser would
w.eval(d.querySelector("script").textContent);

const boxes = [...d.querySelectorAll("g.f")];
function state() {
  return {
    boxes: boxes.map((g) => {
      const rect = g.querySelector("rect");
      return {
        graph: g.parentNode.getAttribute("id"),
        name: g.querySelector("title").textContent.split("\n")[0],
        depth: +g.getAttribute("data-d"),
        x: +rect.getAttribute("x"),
        w: +rect.getAttribute("width"),
        fill: rect.getAttribute("fill"),
        hidden: g.style.display === "none",
        faded: g.classList.contains("parent"),
        text: g.querySelector("text").textContent,
      };
    }),
    matched: [...d.querySelectorAll("text.matched")].map((t) => t.textContent),
    search_button: d.getElementById("search").textContent,
  };
}
function click(node) {
  node.dispatchEvent(new w.MouseEvent("click", { bubbles: true }));
}

const steps = { initial: state() };
click(boxes.find((g) => g.querySelector("title").textContent.split("\n")[0] === zoomName));
steps.zoomed = state();
click(d.getElementById("reset-zoom"));
steps.unzoomed = state();
answer = searchTerm;
click(d.getElementById("search"));
steps.searched = state();
click(d.getElementById("search"));
steps.unsearched = state();
answer = "(";
click(d.getElementById("search"));
steps.bad_search = state();
steps.alerts = alerts;
process.stdout.write(JSON.stringify(steps));
