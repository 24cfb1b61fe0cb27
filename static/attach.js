// Attach images and files to a prompt: pick (the Attach button), paste or
// drop them on the composer. Each is checked here first (size, count,
// name, and that a file calling itself a PNG, JPEG, GIF or WebP image is
// one, by its first bytes) and refused with a sentence before anything is
// sent; then uploaded at once (POST /sessions/{id}/attachments), shown as
// a chip with a remove button, and named by id in the prompt's message
// (hidden inputs "attach" that htmx's ws-send sends with the text). The
// server checks everything again.
(function () {
  "use strict";
  var box = document.getElementById("attach");
  var form = document.getElementById("prompt-form");
  if (!box || !form) return;
  var m = location.pathname.match(/^\/sessions\/([^/]+)/);
  if (!m) return;
  var uploadURL = "/sessions/" + m[1] + "/attachments";
  var lim = {
    image: +box.dataset.maxImage, file: +box.dataset.maxFile, count: +box.dataset.maxCount,
    message: +box.dataset.maxMessage, name: +box.dataset.maxName
  };
  var chips = document.getElementById("attach-chips");
  var note = document.getElementById("attach-note");
  var input = document.getElementById("attach-input");
  var pending = 0;
  var encoder = new TextEncoder();

  function sizeText(n) { // as limit.TextSize
    return n < 1048576 ? Math.ceil(n / 1024) + " KiB" : (n / 1048576).toFixed(1) + " MiB";
  }
  function csrf() {
    var m = document.querySelector('meta[name="csrf-token"]');
    return m ? m.content : "";
  }
  function say(text) { note.textContent = text || ""; note.hidden = !text; }
  function attached() { return chips.querySelectorAll("li"); }
  function total() {
    var n = 0;
    attached().forEach(function (li) { n += +li.dataset.size; });
    return n;
  }
  // imageType reads the first bytes as attach.ImageType does.
  function imageType(b) {
    function at(i, s) { for (var k = 0; k < s.length; k++) if (b[i + k] !== s.charCodeAt(k)) return false; return true; }
    if (at(0, "\x89PNG\r\n\x1a\n")) return "image/png";
    if (b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return "image/jpeg";
    if (at(0, "GIF87a") || at(0, "GIF89a")) return "image/gif";
    if (at(0, "RIFF") && at(8, "WEBP")) return "image/webp";
    return "";
  }
  function claimsImage(f) {
    return /\.(png|jpe?g|gif|webp)$/i.test(f.name) || /^image\/(png|jpeg|gif|webp)$/i.test(f.type);
  }
  // nameProblem is attach.CleanName's refusal, or "".
  function nameProblem(name) {
    name = name.trim();
    if (!name) return "That file has no name: give it one and attach it again.";
    if (/[\/\\]/.test(name)) return JSON.stringify(name) + " is a path, not a file name: Parley saves attachments only under a name of its own folder. Rename the file and attach it again.";
    if (name === "." || name === "..") return JSON.stringify(name) + " is not a file name: rename the file and attach it again.";
    var n = encoder.encode(name).length;
    if (n > lim.name) return "That file's name is " + n + " bytes long; the limit is " + lim.name + ". Rename it and attach it again.";
    if (/[\u0000-\u001f\u007f-\u009f]/.test(name)) return JSON.stringify(name) + " holds a control character: rename the file and attach it again.";
    return "";
  }
  // check refuses f with a sentence, or resolves to its image type ("" for a file).
  function check(f) {
    return f.slice(0, 12).arrayBuffer().then(function (buf) {
      var mt = imageType(new Uint8Array(buf));
      var p = nameProblem(f.name);
      if (p) throw new Error(p);
      if (!mt && claimsImage(f)) throw new Error(f.name + " is not a PNG, JPEG, GIF or WebP image (its content is something else): attach a real image, or rename the file to attach it as a file.");
      if (mt && f.size > lim.image) throw new Error(f.name + " is " + sizeText(f.size) + "; an image may be at most " + sizeText(lim.image) + ".");
      if (f.size > lim.file) throw new Error(f.name + " is " + sizeText(f.size) + "; a file may be at most " + sizeText(lim.file) + ".");
      if (attached().length + 1 > lim.count) throw new Error("This message has " + (attached().length + 1) + " attachments; the limit is " + lim.count + ". Remove some and send again.");
      if (total() + f.size > lim.message) throw new Error("The attachments of this message are " + sizeText(total() + f.size) + " together; the limit is " + sizeText(lim.message) + ". Remove some and send again.");
      return mt;
    });
  }
  function chip(f, mt) {
    var li = document.createElement("li");
    li.className = "attach-chip uploading";
    li.dataset.size = String(f.size);
    if (mt) {
      var img = document.createElement("img");
      img.alt = "";
      var rd = new FileReader(); // a data: URL: the CSP allows no blob: images
      rd.onload = function () { img.src = rd.result; };
      rd.readAsDataURL(f);
      li.appendChild(img);
    }
    var label = document.createElement("span");
    label.className = "attach-name";
    label.textContent = f.name + " (" + sizeText(f.size) + ")";
    li.appendChild(label);
    var rm = document.createElement("button");
    rm.type = "button";
    rm.className = "attach-remove";
    rm.textContent = "×";
    rm.setAttribute("aria-label", "Remove " + f.name);
    rm.addEventListener("click", function () {
      li.remove();
      say("");
      if (li.dataset.id) { // uploaded: the server forgets it too
        fetch("/attachments/" + encodeURIComponent(li.dataset.id) + "/remove", {
          method: "POST", credentials: "same-origin", headers: { "X-CSRF-Token": csrf() }
        }).catch(function () { /* it goes after a day anyway */ });
      }
    });
    li.appendChild(rm);
    chips.appendChild(li);
    return li;
  }
  function upload(f, li) {
    var fd = new FormData();
    fd.append("file", f, f.name);
    pending++;
    return fetch(uploadURL, {
      method: "POST", body: fd, credentials: "same-origin",
      headers: { "Accept": "application/json", "X-CSRF-Token": csrf() }
    }).then(function (r) {
      if (!r.ok) return r.text().then(function (t) { throw new Error(t.trim() || "The upload failed; try again."); });
      return r.json();
    }).then(function (a) {
      var h = document.createElement("input");
      h.type = "hidden";
      h.name = "attach";
      h.value = a.id;
      li.appendChild(h);
      li.dataset.id = a.id;
      li.classList.remove("uploading");
    }).catch(function (err) {
      li.remove();
      say(err.message);
    }).finally(function () { pending--; });
  }
  function add(files) {
    say("");
    Array.prototype.reduce.call(files, function (p, f) {
      return p.then(function () { return check(f); }).then(function (mt) {
        upload(f, chip(f, mt));
      }, function (err) { say(err.message); });
    }, Promise.resolve());
  }

  // The chips go into the form, so ws-send sends their ids with the text.
  form.appendChild(box);
  input.addEventListener("change", function () { add(input.files); input.value = ""; });
  var prompt = document.getElementById("prompt");
  if (prompt) prompt.addEventListener("paste", function (e) {
    var files = e.clipboardData && e.clipboardData.files;
    if (files && files.length) { e.preventDefault(); add(files); }
  });
  var composer = form.closest(".composer") || form;
  composer.addEventListener("dragover", function (e) { e.preventDefault(); composer.classList.add("dropping"); });
  composer.addEventListener("dragleave", function () { composer.classList.remove("dropping"); });
  composer.addEventListener("drop", function (e) {
    e.preventDefault();
    composer.classList.remove("dropping");
    if (e.dataTransfer && e.dataTransfer.files.length) add(e.dataTransfer.files);
  });
  document.addEventListener("htmx:wsBeforeSend", function (e) {
    if (e.target !== form && !(e.target.closest && e.target.closest("form") === form)) return;
    if (pending > 0 || chips.querySelector(".uploading")) {
      e.preventDefault();
      say("Wait until the attachments have uploaded, then send.");
    }
  });
  document.addEventListener("htmx:wsAfterSend", function (e) {
    if (e.target !== form && !(e.target.closest && e.target.closest("form") === form)) return;
    chips.textContent = "";
    say("");
  });
})();
