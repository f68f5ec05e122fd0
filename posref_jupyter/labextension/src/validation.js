// What the course's two Validate buttons share (the notebook toolbar's, button.js, and each notebook's in the
// Assignment List, assignments.js): the words the page holds, the request to nbgrader's server extension
// (POST assignments/validate: the notebook from the top in a fresh kernel, then its checks) and the dialog that shows
// its answer. Every word shown is one the server extension posref_jupyter.validate put in the page
// (`posrefValidate`), from posref's catalogs; this file holds none.
import { Dialog } from '@jupyterlab/apputils';
import { PageConfig, URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';
import { Widget } from '@lumino/widgets';

/** The words the page config holds under `option` (a server extension put them there), or null where it has none. */
export function pageWords(option) {
  const words = PageConfig.getOption(option);
  if (!words) {
    return null;
  }
  return typeof words === 'string' ? JSON.parse(words) : words;
}

/** `text` with each `{name}` replaced by `fields[name]`. */
export function fill(text, fields) {
  return text.replace(/\{(\w+)\}/g, (field, name) => (name in fields ? String(fields[name]) : field));
}

export function element(tag, text, className) {
  const node = document.createElement(tag);
  node.textContent = text;
  if (className) {
    node.className = className;
  }
  return node;
}

/** nbgrader's JSON answer to `body` POSTed (or a GET where `body` is undefined) at `route` of the server. */
export async function request(route, body) {
  const settings = ServerConnection.makeSettings();
  const url = URLExt.join(settings.baseUrl, route);
  const init = body === undefined ? { method: 'GET' } : { method: 'POST', body: JSON.stringify(body) };
  const response = await ServerConnection.makeRequest(url, init, settings);
  const reply = await response.json();
  if (!response.ok) {
    throw new ServerConnection.ResponseError(response, reply.message);
  }
  return reply;
}

/**
 * The dialog's body for nbgrader's `reply`, and whether every check passed. nbgrader's value says one of: a cell
 * whose type was changed (`type_changed`: nbgrader refuses the notebook before it runs it), a locked cell whose
 * source was changed (`changed`), the graded cells that failed (`failed`: each one's source, and its error as HTML,
 * which nbgrader's ansi2html escaped), or nothing: every check passed. A failure nbgrader words itself (a written
 * answer left empty) is said in the edition's language.
 */
function results(reply, words) {
  const body = document.createElement('div');
  body.className = 'posref-validation';
  if (reply.success !== true) {
    body.append(element('p', words.error), element('pre', String(reply.value)));
    return { body, passed: false };
  }
  const value = typeof reply.value === 'string' ? JSON.parse(reply.value) : reply.value;
  if (value.type_changed !== undefined) {
    for (const cell of value.type_changed) {
      // nbgrader's names: old_type is the cell's type now, new_type the one its metadata recorded at release
      const said = words.type_changed[cell.new_type][cell.old_type];
      body.append(element('p', said), element('pre', cell.source));
    }
    return { body, passed: false };
  }
  if (value.changed !== undefined) {
    for (const cell of value.changed) {
      body.append(element('p', words.changed), element('pre', cell.source));
    }
    return { body, passed: false };
  }
  if (value.failed !== undefined) {
    body.append(element('p', fill(words.failed, { count: value.failed.length })));
    for (const cell of value.failed) {
      const error = document.createElement('pre');
      const nbgraderSaid = words.nbgrader[cell.raw_error.trim()];
      if (nbgraderSaid) {
        error.textContent = nbgraderSaid;
      } else {
        error.innerHTML = cell.error;
      }
      const output = document.createElement('div');
      output.className = 'jp-RenderedText posref-validation-error';
      output.append(error);
      body.append(element('p', words.cell_failed), element('pre', cell.source), output);
    }
    return { body, passed: false };
  }
  body.append(element('p', words.passed));
  return { body, passed: true };
}

/** A dialog titled `title` showing `body` (a sentence or a widget), with the edition's OK. */
export function tell(title, body, words) {
  return new Dialog({ title, body, buttons: [Dialog.okButton({ label: words.ok })] }).launch();
}

/**
 * Validate the saved notebook at `path` (relative to the server's root) and show what nbgrader found; `say(label,
 * enabled)` shows the button's state meanwhile. -> whether every check passed (false where it could not run).
 */
export async function validateAndShow(path, words, say) {
  say(words.validating, false);
  let reply;
  try {
    reply = await request('assignments/validate', { path });
  } catch (error) {
    say(words.validate, true);
    await tell(words.failed_title, fill(words.cannot_validate, { error }), words);
    return false;
  }
  say(words.validate, true);
  const { body, passed } = results(reply, words);
  await tell(words.title, new Widget({ node: body }), words);
  return passed;
}
